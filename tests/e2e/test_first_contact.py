"""First contact: a wheel installs and runs anywhere, the command explains itself, typos are caught."""
import json
import os
import signal
import subprocess
import sys
import venv

import pytest

from hermes_pipeline import __version__
from testkit.env import REAL, ROOT, TAU_BENCH, read_jsonl, run_cli, wait_until_listed

SAMPLES = ROOT / "samples"
WHEELHOUSE = ROOT / ".wheelhouse"      # `make wheels`: the dependencies as wheels, fetched once


def cli(*args, cwd=ROOT, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | (env or {})
    return subprocess.run([sys.executable, "-m", "hermes_pipeline", *args], capture_output=True, text=True,
                          cwd=cwd, env=full_env, timeout=120)


def test_a_wheel_installed_in_a_fresh_virtualenv_runs_from_another_directory(tmp_path):
    if not (WHEELHOUSE / ".complete").exists():
        pytest.skip(f"no dependency wheels in {WHEELHOUSE}: `make wheels` (make test does it) fetches them once")
    offline = ["--no-index", "--find-links", str(WHEELHOUSE), "--disable-pip-version-check"]
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(wheels), *offline],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    assert "deprecat" not in (built.stdout + built.stderr).lower()   # no warnings from our build metadata
    wheel = next(wheels.glob("hermes_pipeline-*.whl"))
    env_dir = tmp_path / "fresh-venv"
    venv.create(env_dir, with_pip=False)        # this pip installs into it (--python): no pip of its own to set up
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install",
                              "-q", "--no-compile", *offline, str(wheel)], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr
    assert "deprecated" not in install.stderr.lower()      # no warnings from our build metadata
    work = tmp_path / "somewhere" / "else"
    work.mkdir(parents=True)
    (work / "chats.jsonl").write_bytes((SAMPLES / "tau-bench-airline.jsonl").read_bytes())
    command = env_dir / "bin" / "hermes-pipeline"
    result = subprocess.run([str(command), "input=chats.jsonl", "model.context_length=8000", "progress=none"],
                            capture_output=True, text=True, cwd=work, timeout=300,
                            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert result.returncode == 0, result.stderr
    run_dirs = list((work / "runs").glob("*/*"))
    assert len(run_dirs) == 1, run_dirs                       # runs land under the working directory
    rows = read_jsonl(run_dirs[0] / "manifest.jsonl")
    assert len(rows) == 12 and sum(r["status"] == "compacted" for r in rows) > 0
    assert (run_dirs[0] / "cli.log").exists() and (run_dirs[0] / ".hydra" / "config.yaml").exists()
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True, cwd=work)
    assert version.stdout.strip() == f"hermes-pipeline {__version__}"


def test_help_explains_every_key_with_its_default():
    result = cli("--help")
    assert result.returncode == 0
    text = result.stdout
    assert "compression.threshold = 0.5" in text and "compact when prompt tokens >= threshold" in text
    assert "[0.0..1.0]" in text                                   # the range, from the schema
    for key in ("compression.target_ratio", "prompt_caching.cache_ttl", "model.context_length", "hygiene.threshold",
                "summarizer.retry.attempts", "runner.processes", "context.engine", "input.path"):
        assert f"{key} = " in text, key
    assert "hermes-pipeline input=" in text                      # the common commands
    # what a folder input reads, as docs/formats.md says (not only *.jsonl)
    assert "every *.jsonl below a folder" not in text and ".json, .ndjson" in text and ".gz/.zst" in text
    assert "Exit status" in text


def test_version_is_the_projects():
    assert cli("--version").stdout.strip() == f"hermes-pipeline {__version__}"


@pytest.mark.parametrize("typo, closest", [
    ("+compresion.threshold=0.4", "compression.threshold"),
    ("compresion.threshold=0.4", "compression.threshold"),
    ("compression.treshold=0.4", "compression.threshold"),
    ("+prompt_caching.ttl=1h", "prompt_caching.cache_ttl"),
    ("summarizer.retry.atempts=2", "summarizer.retry.attempts"),
    ("inptu=samples", "input"),         # a short form
    ("runer.processes=2", "runner.processes"),
])
def test_an_unknown_key_fails_naming_the_closest_valid_key(tmp_path, typo, closest):
    result = run_cli(tmp_path / "run", "input=samples", typo)
    assert result.returncode == 1
    assert f"did you mean {closest}?" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "run" / "manifest.jsonl").exists()


@pytest.mark.parametrize("override, said", [
    ("threshold=0.4", "did you mean compression.threshold (or hygiene.threshold)?"),
    ("model.context_length=16k", "model.context_length='16k' is not an integer (write 16000, not 16k)"),
    ("compression.threshold=high", "compression.threshold='high' is not a number"),
    ("model=claude-opus", "model='claude-opus' is no option of model: one of claude-haiku-4-5, claude-sonnet-4-5, "
                          "claude-sonnet-4-6, gpt-4.1-mini, gpt-4o\n"),         # no haiku suggested for an opus
    ("compression.threshold=40%", "compression.threshold='40%' is not a number"),
    ("model.context_length=16,000", "a list of values is a sweep (hermes-pipeline -m ...)"),
    ("summarizer=antropic", "did you mean anthropic?"),
])
def test_a_wrong_key_or_value_is_said_in_one_line_before_hydra_composes(tmp_path, override, said):
    result = run_cli(tmp_path / "run", "input=samples", override)
    assert result.returncode == 1
    assert said in result.stderr and "HYDRA_FULL_ERROR" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and not (tmp_path / "run").exists()


def console_scripts() -> dict[str, str]:
    """The commands pyproject.toml installs: name -> module:function."""
    import tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def command(name: str, *args: str, cwd=ROOT):
    """A console script as pip installs it: its entry point called with sys.argv set, its return the status."""
    module, function = console_scripts()[name].split(":")
    code = f"import sys; from {module} import {function}; sys.argv[0] = {name!r}; sys.exit({function}())"
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=full_env,
                          timeout=120)


# argparse's usage errors exit 2, which hermes-pipeline's exit table gives to quarantined records (issue 31)
USAGE_ERRORS = {
    "hermes-pipeline": [(["--input", "samples"], "unknown option --input: settings are key=value (input=samples)"),
                        (["--input=samples"], "unknown option --input=samples: settings are key=value (input=samples)"),
                        (["-x", "input=samples"], "unknown option -x"),
                        (["--cfg", "jobs"], "argument --cfg/-c: invalid choice: 'jobs'"),
                        (["--resolve", "input=samples"], "--resolve goes with --cfg"),
                        (["--shell-completion"], "--shell-completion needs install=SHELL, uninstall=SHELL or query="),
                        (["--experimental-rerun", "/no/such/config.pickle"], "/no/such/config.pickle: no such file"),
                        (["input", "samples"], "Error parsing override 'input'")],
    "hermes-pipeline-show": [([], "the following arguments are required: RUN_DIR, ID"),
                             (["runs/x", "id", "--fulll"], "unrecognized arguments: --fulll")],
    "hermes-pipeline-report": [([], "the following arguments are required: dirs"),
                               (["runs/x", "--out"], "argument --out: expected one argument")],
    "hermes-pipeline-lcm": [([], "the following arguments are required: --store, command"),
                            (["--store", "lcm.sqlite", "grepp", "x"], "invalid choice: 'grepp'"),
                            (["--store", "lcm.sqlite", "grep", "--limit", "ten", "x"], "invalid int value: 'ten'"),
                            (["--store", "/no/such/lcm.sqlite", "list"], "no lcm store at /no/such/lcm.sqlite")],
    "hermes-pipeline-score": [([], "the following arguments are required: original, compacted"),
                              (["a.jsonl", "b.jsonl", "--jsn"], "unrecognized arguments: --jsn"),
                              (["/no/such.jsonl", "b.jsonl"], "/no/such.jsonl: no such file")],
}


def test_every_command_has_its_usage_errors_tried():
    assert set(console_scripts()) == set(USAGE_ERRORS)


@pytest.mark.parametrize("name, args, said", [(name, args, said) for name, cases in USAGE_ERRORS.items()
                                              for args, said in cases],
                         ids=[f"{name} {' '.join(args)}" for name, cases in USAGE_ERRORS.items() for args, _ in cases])
def test_a_usage_error_of_any_command_exits_1_saying_what_is_wrong(tmp_path, name, args, said):
    result = command(name, *args, cwd=tmp_path)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not list(tmp_path.iterdir())     # nothing written, no run folder


def test_a_wrong_provider_model_fails_at_start_up(tmp_path):
    result = run_cli(tmp_path / "run", "input=samples", "summarizer=openai",
                     "auxiliary.compression.model=claude-sonnet-4-5", env={"OPENAI_API_KEY": "sk-test-" + "x" * 24})
    assert result.returncode == 1
    assert "auxiliary.compression.model='claude-sonnet-4-5' is not an openai model" in result.stderr
    assert not (tmp_path / "run" / "manifest.jsonl").exists()


def test_every_unchanged_row_says_why_in_plain_words(tmp_path):
    result = run_cli(tmp_path / "run", f"input={REAL}")          # defaults: the real logs stay under 100K
    assert result.returncode == 0, result.stderr
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if r["status"] == "unchanged"]
    assert rows and all(r["noop_reason"] for r in rows)
    claude = next(r for r in rows if r["id"] == "1af7fc5e-8455-4414-9ccd-011d40f70b2a")
    assert claude["noop_reason"] == (f"below threshold: {claude['tokens_before']:,} of 100,000 tokens; recorded "
                                     f"usage {claude['tokens_recorded']:,} is below the safety net's 170,000")
    run_cli(tmp_path / "off", f"input={TAU_BENCH}", "compression.enabled=false")
    assert {r["noop_reason"] for r in read_jsonl(tmp_path / "off" / "manifest.jsonl")} == \
        {"compression disabled (compression.enabled=false)"}


def test_progress_none_keeps_the_results_table_and_quiet_hides_it(tmp_path):
    shown = run_cli(tmp_path / "a", f"input={TAU_BENCH}", "progress=none")
    assert "tokens before" in shown.stdout and "run folder:" in shown.stdout
    quiet = run_cli(tmp_path / "b", f"input={TAU_BENCH}", "progress=none", "quiet=true")
    assert quiet.returncode == 0 and quiet.stdout == ""


def test_ctrl_c_exits_3_without_a_traceback(tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_bytes(TAU_BENCH.read_bytes() * 25)                   # long enough to interrupt mid-run
    process = subprocess.Popen([sys.executable, "-m", "hermes_pipeline", f"input={big}", "progress=log",
                                f"hydra.run.dir={tmp_path / 'run'}", "model.context_length=4000"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until_listed(process, tmp_path / "run" / "manifest.jsonl", 3) >= 3      # mid-run
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 3, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_piping_the_output_into_a_reader_that_stops_early_is_not_an_error(tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "hermes_pipeline", f"input={TAU_BENCH}",
                                f"hydra.run.dir={tmp_path / 'run'}", "progress=none"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.readline()           # `| head -1`
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert b"Traceback" not in err
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["exit_code"] == 0


def test_cli_log_tells_the_run_and_a_quiet_run_names_its_quarantine(tmp_path):
    """cli.log is the run's own log (start, each file, each record set aside, the end), and stays out of the
    console; the one line a quiet run prints names the quarantine file it points to."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "good.jsonl").write_bytes(TAU_BENCH.read_bytes().split(b"\n", 2)[0] + b"\n")
    (inputs / "bad.jsonl").write_bytes(TAU_BENCH.read_bytes().split(b"\n", 2)[1] + b"\n{not json\n")
    run_dir = tmp_path / "run"
    result = run_cli(run_dir, f"input={inputs}")
    assert result.returncode == 2, result.stderr
    log = (run_dir / "cli.log").read_text()
    assert f"input {inputs} (2 file(s)" in log and "engine compressor, summarizer extractive" in log
    assert f"quarantined: {inputs / 'bad.jsonl'}:2: malformed JSON" in log
    assert "bad.jsonl: 1 quarantined, 1 unchanged" in log and "good.jsonl: 1 unchanged" in log
    assert "finished: complete, exit status 2 (1 record(s) quarantined" in log
    assert "records: 2 unchanged, 1 quarantined;" in log
    assert "run_log" not in result.stdout + result.stderr                  # the console shows what it did before
    assert "progress: 100% of input read" in result.stdout                 # progress=log: a last line, however short
    quiet = run_cli(tmp_path / "quiet", f"input={inputs}", "quiet=true")
    assert quiet.returncode == 2 and quiet.stdout == ""
    assert quiet.stderr.strip() == f"hermes-pipeline: 1 record(s) quarantined; see {tmp_path / 'quiet'}/quarantine.jsonl"


def test_the_results_table_is_boxed_with_values_right_aligned():
    from hermes_pipeline.reports.console import render_table
    text = render_table("hermes-pipeline run", ("measure", "value"),
                        [("compacted", "40"), ("tokens before", "5,345,395"), ("files changed kept", "1265/1265")])
    lines = text.splitlines()
    assert lines[0].strip() == "hermes-pipeline run"
    box = lines[1:]
    assert len({len(line) for line in box}) == 1, text          # every row as wide as the box
    assert box[0].startswith("┏") and box[-1].startswith("└")
    assert "│ compacted          │        40 │" in box
    assert "│ tokens before      │ 5,345,395 │" in box


def test_make_test_says_why_tests_were_skipped():
    """Tests that need the shared corpus skip without it: `make test` lists them with the reason (-rs)."""
    import shlex
    plan = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert plan.returncode == 0, plan.stderr
    [pytest_call] = [line for line in plan.stdout.splitlines() if " -m pytest" in line]
    assert "-rs" in shlex.split(pytest_call, comments=True)
