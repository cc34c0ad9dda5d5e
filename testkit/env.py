"""Where the tests' data is, and how they run the real command line."""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testkit.cli_server import CliServer

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"            # real transcripts kept in the repository
TAU_BENCH = REAL / "tau-bench" / "gpt-4o-airline.first40.jsonl"
SHARED = Path(os.environ.get("HERMES_SHARED", ROOT.parent / "shared"))
CORPUS = Path(os.environ.get("HERMES_CORPUS", SHARED / "corpus"))
LONG_SESSIONS = Path(os.environ.get("HERMES_LONG_SESSIONS", SHARED / "long-sessions"))


def examples(count: int) -> int:
    """A property test's number of examples: `count` for `make test`, times HERMES_FUZZ_EXAMPLES for a deeper
    run (HERMES_FUZZ_EXAMPLES=10 make test-unit). Hypothesis keeps every failing example it found in
    .hypothesis/ and tries it first next time, whatever the count."""
    return count * int(os.environ.get("HERMES_FUZZ_EXAMPLES", "1"))


def shared(path: Path) -> Path:
    """Extra real material beside the repository; the test skips, saying why, when it is absent."""
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared corpus sits beside the repository in CI; "
                    "set HERMES_SHARED, HERMES_CORPUS or HERMES_LONG_SESSIONS to point at a copy)")
    return path


def read_jsonl(path: Path) -> list:
    # split on newlines only: splitlines() also breaks at \x85 and \u2028, which JSON strings hold as they are
    return [json.loads(line) for line in Path(path).read_text().split("\n") if line.strip()]


_warm = CliServer()
atexit.register(_warm.close)


def run_cli(run_dir: Path, *overrides: str, env: dict | None = None, timeout: int = 300, cwd: Path = ROOT,
            fresh: bool = False):
    """The real command line, `python -m hermes_pipeline`, in a process of its own writing its run folder to
    run_dir (see run_module)."""
    return run_module("hermes_pipeline", f"hydra.run.dir={run_dir}", "progress=log", *overrides, env=env,
                      timeout=timeout, cwd=cwd, fresh=fresh)


def run_module(module: str, *args: str, env: dict | None = None, timeout: int = 300, cwd: Path = ROOT,
               fresh: bool = False):
    """`python -m MODULE ARGS` as subprocess.run(capture_output=True, text=True) gives it, with no API key
    from this environment: forked from a warm process that has the imports done (testkit/cli_server.py),
    or a new interpreter when `fresh`, when HERMES_FRESH_CLI=1, or when the environment asks for one."""
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full_env.update(env or {})
    if not (fresh or _needs_new_interpreter(full_env)):
        done = _warm.run(module, list(args), full_env, Path(cwd), timeout)
        if done is not None:
            return done
    command = [sys.executable, "-m", module, *args]
    return subprocess.run(command, capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout)


def _needs_new_interpreter(env: dict) -> bool:
    """What a forked run cannot honour: Python's start-up settings (PYTHONPATH, ...)."""
    started = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    return os.environ.get("HERMES_FRESH_CLI") == "1" or {k: v for k, v in env.items() if k.startswith("PYTHON")} != started


def wait_until_listed(process: subprocess.Popen, manifest: Path, rows: int) -> int:
    """Wait until a run started with Popen has listed `rows` conversations in its manifest, or has ended;
    returns the rows listed. Waits on the run's own progress, not on the clock: a loaded machine only
    makes it wait longer."""
    listed = 0
    while process.poll() is None:
        listed = Path(manifest).read_bytes().count(b"\n") if Path(manifest).exists() else 0
        if listed >= rows:
            break
        time.sleep(0.01)      # between two looks at the manifest
    return listed
