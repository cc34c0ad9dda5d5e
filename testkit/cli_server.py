"""The real command line, started warm: each run is forked from a process that has already imported
hermes_pipeline and the SDKs, instead of a new interpreter importing them all again.

A run is still a process of its own, started as `python -m hermes_pipeline ARGS` would be: its own
argv, environment, working folder, stdin (/dev/null), stdout and stderr, and Python's usual exit
(SystemExit, atexit handlers, threads joined). What the runs share is the interpreter's start-up and
the imports, about half a second of CPU a run, which was most of what the suite's few hundred CLI
runs cost. What a warm run cannot have, `testkit.env.run_cli` starts fresh: an environment that
changes how Python starts (PYTHON*), and runs asked for `fresh=True` (the determinism tests: a second
interpreter has another hash seed). A fault (`HERMES_FAULT`) kills the forked run itself, with SIGKILL.

Protocol, one JSON line each way per run: the client writes {"module", "args", "env", "cwd", "stdout",
"stderr"}; the server forks, answers {"pid"}, waits, answers {"returncode"} (negative: killed by
that signal, as subprocess reports it). The server ends when its stdin closes.
"""
from __future__ import annotations

import atexit
import gc
import importlib
import json
import locale
import os
import pkgutil
import runpy
import selectors
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# imported before the first fork: everything a run imports (never hermes_pipeline.__main__, which runs the
# command)
NOT_PRELOADED = ("hermes_pipeline.__main__", "hermes_pipeline.testing")
SDKS = ("anthropic", "openai", "dask.distributed")


def _preload() -> None:
    import hermes_pipeline
    for module in pkgutil.walk_packages(hermes_pipeline.__path__, "hermes_pipeline."):
        if not module.name.startswith(NOT_PRELOADED):
            _try_import(module.name)
    for name in SDKS:
        _try_import(name)


def _try_import(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:     # an optional extra that is not installed: the run imports it, or says so, itself
        pass


def serve() -> dict:
    """Answer run requests until stdin closes; returns (in the forked child only) the request to become."""
    _preload()
    if threading.active_count() != 1:
        sys.exit(1)          # a fork would not be a clean start: the client runs everything fresh
    gc.freeze()      # the preloaded objects stay out of the children's collections (and their pages shared)
    replies = os.fdopen(os.dup(1), "w")
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            replies.close()
            return request
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()
    sys.exit(0)


def become(request: dict) -> None:
    """This forked process turns into the requested run: folder, environment, stdio, argv."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.path[0] = os.getcwd()      # as `python -m` has it: modules are found in the run's folder first
    sys.argv = ["-m", *request["args"]]


class CliServer:
    """The client side, one server per test process, started on first use; `run` is subprocess.run's
    result for `python -m MODULE ARGS`, or None when the server cannot take the run (then run it fresh)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.broken = False
        self.lock = threading.Lock()
        self.pending = b""           # what was read from the server past the last whole line

    def run(self, module: str, args: list[str], env: dict, cwd: Path, timeout: float):
        if self.broken or not self.lock.acquire(blocking=False):   # busy (a test's second thread): run fresh
            return None
        try:
            if not self._started():
                return None
            with tempfile.TemporaryDirectory(prefix="cli-") as folder:
                out, err = Path(folder) / "stdout", Path(folder) / "stderr"
                request = {"module": module, "args": args, "env": env, "cwd": str(cwd),
                           "stdout": str(out), "stderr": str(err)}
                self.process.stdin.write(json.dumps(request).encode() + b"\n")
                self.process.stdin.flush()
                pid = self._reply(None)["pid"]
                command = [sys.executable, "-m", module, *args]
                try:
                    returncode = self._reply(timeout)["returncode"]
                except TimeoutError:
                    os.kill(pid, 9)
                    self._reply(None)
                    raise subprocess.TimeoutExpired(command, timeout, _text(out), _text(err)) from None
                return subprocess.CompletedProcess(command, returncode, _text(out), _text(err))
        finally:
            self.lock.release()

    def _started(self) -> bool:
        if self.process is not None and self.process.poll() is None:
            return True
        env = {k: v for k, v in os.environ.items() if k != "HERMES_FAULT"}    # the server itself never dies on cue
        self.process = subprocess.Popen([sys.executable, "-m", "testkit.cli_server"], cwd=ROOT, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.pending = b""
        try:
            self._reply(120)
        except (TimeoutError, ValueError):
            self.broken = True
            self.process.kill()
            return False
        return True

    def _reply(self, timeout: float | None) -> dict:
        """The server's next line; TimeoutError when none came in `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            if deadline is not None:
                with selectors.DefaultSelector() as selector:
                    selector.register(fd, selectors.EVENT_READ)
                    if not selector.select(max(0.0, deadline - time.monotonic())):
                        raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                self.broken = True
                raise ValueError("the CLI server ended")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _text(path: Path) -> str:
    """What subprocess.run(text=True) would have given: the locale's encoding, universal newlines."""
    if not path.exists():
        return ""
    with open(path, encoding=locale.getpreferredencoding(False), newline=None) as handle:
        return handle.read()


def run_and_exit(module: str) -> None:
    """Run `module` as __main__ and exit as the interpreter would (non-daemon threads joined, atexit
    handlers run, stdio flushed, SystemExit's code), all but tearing every module down: that would write
    to each page shared with the server and make the system copy it, a second a run."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        if not isinstance(done.code, (int, type(None))):
            print(done.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()      # what the interpreter does first at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    wanted = serve()
    become(wanted)
    run_and_exit(wanted["module"])
