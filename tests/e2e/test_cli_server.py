"""testkit's warm command line (testkit/cli_server.py): a run forked from the warm server is the run a new
interpreter makes: the same exit status, stdout, stderr and output bytes; its own folder and environment;
a run over its time is killed and the next one still runs."""
import os
import subprocess
import sys

import pytest

import testkit.env as env_module
from testkit.cli_server import CliServer
from testkit.env import ROOT, TAU_BENCH, run_cli


@pytest.fixture(scope="module")
def server():
    warm = CliServer()
    yield warm
    warm.close()


def fresh(*args: str, cwd=ROOT, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd,
                          env=env or dict(os.environ), timeout=120)


@pytest.mark.parametrize("args", [["--version"], ["input=samples", "no_such_key=1"], ["input=samples", "--cfg", "job"]],
                         ids=["version", "unknown-key", "print-config"])
def test_a_warm_run_answers_as_a_new_interpreter_does(server, args):
    warm = server.run("hermes_pipeline", args, dict(os.environ), ROOT, timeout=120)
    cold = fresh("hermes_pipeline", *args)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.args == [sys.executable, "-m", "hermes_pipeline", *args]


def test_a_warm_run_has_its_own_folder_environment_and_exit_status(server, tmp_path):
    (tmp_path / "in.json").write_text('{"b": 1, "a": [1, 2]}')
    shown = server.run("json.tool", ["--sort-keys", "in.json"], {"PATH": os.environ["PATH"]}, tmp_path, timeout=60)
    assert shown.returncode == 0 and shown.stdout == fresh("json.tool", "--sort-keys", "in.json", cwd=tmp_path).stdout
    env = {"PATH": os.environ["PATH"], "ONLY_HERE": "yes"}
    code = "import os, sys; print(sorted(k for k in os.environ if k == 'ONLY_HERE' or k.endswith('_API_KEY'))); sys.exit(7)"
    (tmp_path / "probe.py").write_text(code)
    probe = server.run("probe", [], env, tmp_path, timeout=60)
    assert (probe.returncode, probe.stdout) == (7, "['ONLY_HERE']\n"), probe.stderr


def test_a_run_over_its_time_is_killed_and_the_next_one_runs(server, tmp_path):
    (tmp_path / "forever.py").write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        server.run("forever", [], {"PATH": os.environ["PATH"]}, tmp_path, timeout=2)
    assert raised.value.output == "started\n"
    after = server.run("hermes_pipeline", ["--version"], dict(os.environ), ROOT, timeout=60)
    assert after.returncode == 0 and after.stdout.startswith("hermes-pipeline ")


def test_a_fault_kills_the_forked_run_and_python_settings_start_a_new_one(tmp_path, monkeypatch):
    """HERMES_FAULT is read when the run gets there, so a warm run dies on cue (SIGKILL: -9); a PYTHON* setting
    and HERMES_FRESH_CLI=1 need a new interpreter, and the warm server is not asked."""
    killed = run_cli(tmp_path / "run", f"input={TAU_BENCH}", env={"HERMES_FAULT": "file:1"})
    assert killed.returncode == -9
    monkeypatch.setattr(env_module._warm, "run", lambda *a, **k: pytest.fail("a warm run where a fresh one is due"))
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "sitecustomize.py").write_text("print('fresh interpreter')\n")
    started = run_cli(tmp_path / "run2", "input=samples", "quiet=true", env={"PYTHONPATH": str(shadow)})
    assert started.returncode == 0 and started.stdout.startswith("fresh interpreter")
    monkeypatch.setenv("HERMES_FRESH_CLI", "1")
    assert run_cli(tmp_path / "run3", "input=samples", "quiet=true").returncode == 0
