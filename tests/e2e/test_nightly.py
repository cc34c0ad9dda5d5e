"""Nightly archive maintenance with the real CLI: incremental, resumable, safe unattended."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from hermes_pipeline.run.incremental import OutputLock
from testkit.env import REAL, ROOT, TAU_BENCH, read_jsonl, run_cli, wait_until_listed

SETTINGS = ("model.context_length=8000",)


def tree_digest(root: Path) -> dict[str, bytes]:
    """Every output file's bytes (the state folder aside)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".hermes" not in p.relative_to(root).parts}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A plain run of the whole archive: what every incremental or resumed run must end up with."""
    base = tmp_path_factory.mktemp("clean")
    result = run_cli(base / "run", f"input={REAL}", f"output.dir={base / 'out'}", *SETTINGS)
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(base / "run" / "manifest.jsonl")
    return tree_digest(base / "out"), len(rows), [(r["source"], r["status"], r["tokens_after"]) for r in rows]


@pytest.fixture
def archive(tmp_path):
    shutil.copytree(REAL, tmp_path / "in", ignore=shutil.ignore_patterns("*.md", "LICENSE"))
    return tmp_path


def nightly(base: Path, name: str, *extra: str, env: dict | None = None):
    return run_cli(base / "runs" / name, f"input={base / 'in'}", f"output.dir={base / 'out'}", "incremental=true",
                   *SETTINGS, *extra, env=env)


def summary(base: Path, name: str) -> dict:
    return json.loads((base / "runs" / name / "summary.json").read_text())


def manifest(base: Path, name: str) -> list[dict]:
    path = base / "runs" / name / "manifest.jsonl"
    return read_jsonl(path) if path.exists() else []


def test_a_rerun_of_an_unchanged_archive_processes_nothing(archive, clean):
    first = nightly(archive, "1")
    assert first.returncode == 0, first.stderr
    assert tree_digest(archive / "out") == clean[0]
    again = nightly(archive, "2")
    assert again.returncode == 0, again.stderr
    assert summary(archive, "2")["conversations"] == 0 and manifest(archive, "2") == []
    assert summary(archive, "2")["skipped_unchanged"] == clean[1]
    log = (archive / "runs" / "2" / "cli.log").read_text()       # the run's log says why nothing was done
    assert f"; {clean[1]} skipped (unchanged since the last run)" in log
    assert f"{TAU_BENCH.name}: unchanged since the last run" in log
    assert summary(archive, "2")["bytes_in"] == 0 and summary(archive, "2")["bytes_skipped"] == \
        summary(archive, "1")["bytes_in"]                              # nothing read: no MB/s of it
    os.utime(archive / "in" / "tau-bench" / TAU_BENCH.name)     # touched, not changed: hashed, still reused
    third = nightly(archive, "3")
    assert third.returncode == 0 and summary(archive, "3")["conversations"] == 0
    assert tree_digest(archive / "out") == clean[0]


def test_a_new_file_and_an_appended_line_are_all_that_is_processed(archive):
    assert nightly(archive, "1").returncode == 0
    tau = archive / "in" / "tau-bench" / TAU_BENCH.name
    lines = tau.read_text().splitlines()
    extra = json.loads(lines[0])
    extra["id"] = "appended-" + extra["id"]
    with open(tau, "a") as handle:
        handle.write(json.dumps(extra) + "\n")
    newcomer = archive / "in" / "new" / "today.jsonl"
    newcomer.parent.mkdir()
    newcomer.write_text("\n".join(lines[5:8]) + "\n")
    assert nightly(archive, "2").returncode == 0
    rows = manifest(archive, "2")
    assert sorted(r["source"].rsplit("/", 1)[1] for r in rows) == \
        [f"{TAU_BENCH.name}:{len(lines) + 1}", "today.jsonl:1", "today.jsonl:2", "today.jsonl:3"]
    out = read_jsonl(archive / "out" / "tau-bench" / TAU_BENCH.name)
    assert len(out) == len(lines) + 1 and out[-1]["id"] == extra["id"]   # the output holds every conversation
    reference = run_cli(archive / "runs" / "plain", f"input={archive / 'in'}", f"output.dir={archive / 'plain'}",
                        *SETTINGS)
    assert reference.returncode == 0
    assert tree_digest(archive / "out") == tree_digest(archive / "plain")


def test_a_changed_config_reprocesses_and_deleted_inputs_are_reported_then_pruned(archive, clean):
    assert nightly(archive, "1").returncode == 0
    assert summary(archive, "1")["conversations"] == clean[1]
    assert nightly(archive, "2", "compression.threshold=0.4").returncode == 0
    assert summary(archive, "2")["conversations"] == clean[1]            # every output depends on it
    assert nightly(archive, "3", "progress=none", "runner.concurrency=2").returncode == 0
    assert summary(archive, "3")["conversations"] == clean[1]            # back to 0.5: again
    assert nightly(archive, "4", "progress=none", "runner.concurrency=2").returncode == 0
    assert summary(archive, "4")["conversations"] == 0                   # run-time keys change nothing
    gone = archive / "in" / "claude-reliability" / "hello-world-script.transcript.jsonl"
    gone.unlink()
    fifth = nightly(archive, "5")
    assert fifth.returncode == 0 and "inputs gone (outputs kept)" in fifth.stdout     # the results table says so
    removed = summary(archive, "5")["removed"]
    rel = "claude-reliability/hello-world-script.transcript.jsonl"
    assert removed == {"conversations": 1, "files": [rel], "outputs_deleted": False}
    assert (archive / "out" / "claude-reliability" / gone.name).exists()    # kept without prune
    assert f"{rel}: gone from the input; its output kept" in (archive / "runs" / "5" / "cli.log").read_text()
    pruned = nightly(archive, "6", "incremental.prune=true")
    assert pruned.returncode == 0 and summary(archive, "6")["removed"]["outputs_deleted"] is True
    assert not (archive / "out" / "claude-reliability" / gone.name).exists()
    assert f"{rel}: gone from the input; its output deleted" in (archive / "runs" / "6" / "cli.log").read_text()
    assert nightly(archive, "7").returncode == 0 and summary(archive, "7")["removed"]["conversations"] == 0


def test_another_input_than_the_tree_mirrors_is_refused_with_or_without_prune(archive):
    assert nightly(archive, "1").returncode == 0
    before = tree_digest(archive / "out")
    sub = archive / "in" / "claude-reliability"          # a narrower input: every other output would look gone
    for name, prune in (("2", "incremental.prune=true"), ("3", "incremental.prune=false")):
        refused = run_cli(archive / "runs" / name, f"input={sub}", f"output.dir={archive / 'out'}",
                          "incremental=true", prune, *SETTINGS)
        assert refused.returncode == 1, refused.stderr
        assert f"mirrors input {archive / 'in'}, and this run reads {sub}" in refused.stderr
        assert "incremental.input_moved=true" in refused.stderr
        refusal = summary(archive, name)     # said in the folder: a refusal, with its reason, not a crash
        assert refusal["exit_code"] == 1 and "mirrors input" in refusal["stopped"]
        assert refusal["exit_reason"] == refusal["stopped"]
        assert tree_digest(archive / "out") == before            # nothing written, nothing deleted
    # the right input still works, prune included, and finds nothing gone
    again = nightly(archive, "4", "incremental.prune=true")
    assert again.returncode == 0 and summary(archive, "4")["removed"]["files"] == []
    assert tree_digest(archive / "out") == before


def test_a_run_without_incremental_into_an_incremental_tree_is_refused(archive):
    """Its outputs would land in the tree untracked: never reported, never pruned (a subfolder's or not)."""
    assert nightly(archive, "1").returncode == 0
    before = tree_digest(archive / "out")
    for name, source in (("2", archive / "in"), ("3", archive / "in" / "claude-reliability")):
        refused = run_cli(archive / "runs" / name, f"input={source}", f"output.dir={archive / 'out'}", *SETTINGS)
        assert refused.returncode == 1, refused.stderr
        assert "incremental state" in refused.stderr and "incremental=true" in refused.stderr
        assert summary(archive, name)["exit_code"] == 1
        assert tree_digest(archive / "out") == before
    assert nightly(archive, "4").returncode == 0 and summary(archive, "4")["removed"]["files"] == []


def test_an_archive_that_moved_is_accepted_when_said_so(archive):
    assert nightly(archive, "1").returncode == 0
    before = tree_digest(archive / "out")
    (archive / "in").rename(archive / "moved")
    moved = lambda name, *extra: run_cli(archive / "runs" / name, f"input={archive / 'moved'}",
                                         f"output.dir={archive / 'out'}", "incremental=true", *SETTINGS, *extra)
    assert moved("2").returncode == 1
    said = moved("3", "incremental.input_moved=true", "incremental.prune=true")
    assert said.returncode == 0 and f"it mirrors {archive / 'moved'} from now on" in said.stderr
    assert summary(archive, "3")["conversations"] == 0 and summary(archive, "3")["removed"]["files"] == []
    assert tree_digest(archive / "out") == before
    assert moved("4").returncode == 0 and summary(archive, "4")["skipped_unchanged"] > 0   # the new input from now on


def test_an_input_holding_only_output_says_so(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "chats.jsonl").write_bytes(TAU_BENCH.read_bytes())
    same = run_cli(tmp_path / "run", f"input={tmp_path / 'out'}", f"output.dir={tmp_path / 'out'}")
    assert same.returncode == 1
    assert f"output.dir='{tmp_path / 'out'}' is the input's folder or holds it" in same.stderr
    holds = run_cli(tmp_path / "run", f"input={tmp_path / 'out' / 'chats.jsonl'}", f"output.dir={tmp_path}")
    assert holds.returncode == 1 and "is the input's folder or holds it" in holds.stderr
    assert not (tmp_path / "run").exists()                     # refused before anything is written
    assert run_cli(tmp_path / "only" / "first", f"input={TAU_BENCH}").returncode == 0
    runs = run_cli(tmp_path / "run", f"input={tmp_path / 'only'}")    # a folder holding only a run's folder
    assert runs.returncode == 1
    assert "file(s) are all output of this tool" in runs.stderr, runs.stderr


@pytest.mark.parametrize("fault", ["file:1", "file:4", "committed:5", "listed:9", "committed:30"],
                         ids=["before-the-first-write", "between-files", "during-the-manifest-flush",
                              "mid-file", "late-in-a-big-file"])
def test_kill_9_at_any_point_then_rerun_gives_the_clean_output(archive, clean, fault):
    killed = nightly(archive, "1", env={"HERMES_FAULT": fault})
    assert killed.returncode == -signal.SIGKILL
    assert (archive / "runs" / "1" / "INCOMPLETE").exists() and not (archive / "runs" / "1" / "summary.json").exists()
    rerun = nightly(archive, "2")
    assert rerun.returncode == 0, rerun.stderr
    assert tree_digest(archive / "out") == clean[0]
    assert not list((archive / "out").rglob("*.part"))
    sources = [r["source"] for name in ("1", "2") for r in manifest(archive, name)]
    assert len(sources) == len(set(sources)) == clean[1]       # every conversation exactly once in all
    recovered = summary(archive, "1")
    assert recovered["status"] == "interrupted" and not (archive / "runs" / "1" / "INCOMPLETE").exists()
    assert recovered["conversations"] == len(manifest(archive, "1"))
    assert summary(archive, "2")["skipped_unchanged"] == len(manifest(archive, "1"))
    # unknown, not zero: what only the killed process knew; both logs say what happened
    assert recovered["exit_code"] is None and recovered["files"] is None and recovered["wall_seconds"] is None
    assert recovered["stopped"].startswith("killed before it could finish") and str(archive / "runs" / "2") in \
        recovered["stopped"]
    assert recovered["exit_reason"] == recovered["stopped"]      # every summary.json has both exit fields
    assert "killed before it could finish" in (archive / "runs" / "1" / "cli.log").read_text()
    rerun_log = (archive / "runs" / "2" / "cli.log").read_text()
    assert "died without releasing it; taken over" in rerun_log
    assert f"completed the records of {archive / 'runs' / '1'}" in rerun_log
    assert rerun_log.index("hermes-pipeline ") < rerun_log.index("taken over")    # the run's header comes first


def test_kill_9_at_random_moments_several_times(archive, clean):
    rng = random.Random(7)
    big = archive / "in" / "tau-bench" / TAU_BENCH.name
    for copy in range(5):            # a longer run, so the kills land mid-work
        shutil.copy(big, archive / "in" / "tau-bench" / f"copy-{copy}.jsonl")
    plain = run_cli(archive / "runs" / "plain", f"input={archive / 'in'}", f"output.dir={archive / 'plain'}",
                    *SETTINGS)
    assert plain.returncode == 0
    for attempt in range(3):
        process = subprocess.Popen(
            [sys.executable, "-m", "hermes_pipeline", f"hydra.run.dir={archive / 'runs' / f'k{attempt}'}",
             f"input={archive / 'in'}", f"output.dir={archive / 'out'}", "incremental=true", "progress=none",
             *SETTINGS], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # a random moment mid-run: once it has listed a random number of conversations (of about 250),
        # wherever it is then
        wait_until_listed(process, archive / "runs" / f"k{attempt}" / "manifest.jsonl", rng.randint(1, 40))
        process.kill()
        process.wait()
    killed_mid_run = [d for d in (archive / "runs").glob("k*") if not (d / "summary.json").exists()]
    assert killed_mid_run                        # at least one kill landed before its run finished
    final = nightly(archive, "final")
    assert final.returncode == 0, final.stderr
    assert tree_digest(archive / "out") == tree_digest(archive / "plain")
    sources = [r["source"] for d in sorted((archive / "runs").iterdir()) if d.name != "plain"
               for r in read_jsonl(d / "manifest.jsonl") if (d / "manifest.jsonl").exists()]
    assert Counter(sources).most_common(1)[0][1] == 1
    assert len(sources) == len(read_jsonl(archive / "runs" / "plain" / "manifest.jsonl"))


def test_a_second_run_on_the_same_output_dir_exits_3_naming_the_holder(archive):
    lock = OutputLock(archive / "out", Path("/some/run/folder"))
    try:
        result = nightly(archive, "2")
        assert result.returncode == 3          # at once: waiting for the holder (this process) would never end
        assert f"pid {os.getpid()} on {socket.gethostname()}, run folder /some/run/folder" in result.stderr
        refused = summary(archive, "2")                # said in the folder too: not a crashed run
        assert refused["status"] == "stopped" and refused["exit_code"] == 3 and "in use by pid" in refused["stopped"]
        assert refused["exit_reason"] == refused["stopped"]
        assert not (archive / "runs" / "2" / "INCOMPLETE").exists()
        assert "in use by pid" in (archive / "runs" / "2" / "cli.log").read_text()
        assert f"(this run: {archive / 'runs' / '2'})" in result.stderr
    finally:
        lock.release()
    assert nightly(archive, "3").returncode == 0


def test_a_stale_lock_of_a_dead_process_is_taken_over(archive):
    holder = subprocess.run([sys.executable, "-c", (
        "import os, signal, pathlib\n"
        "from hermes_pipeline.run.incremental import OutputLock\n"
        f"OutputLock(pathlib.Path({str(archive / 'out')!r}), pathlib.Path('dead-run'))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")], cwd=ROOT)
    assert holder.returncode == -signal.SIGKILL
    assert "dead-run" in (archive / "out" / ".hermes" / "lock").read_text()
    assert nightly(archive, "1").returncode == 0


def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path):
    source = tmp_path / "chats.jsonl"
    source.write_bytes((ROOT / "samples" / "tau-bench-airline.jsonl").read_bytes())
    command = [sys.executable, "-m", "hermes_pipeline", f"input={source}", "quiet=true"]
    runs = [subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    assert [p.wait() for p in runs] == [0, 0, 0], [p.stderr.read() for p in runs]
    folders = list((tmp_path / "runs").glob("*/*"))
    assert len(folders) == 3 and all((f / "summary.json").exists() for f in folders)


def test_a_run_folder_given_again_is_refused_not_appended_to(tmp_path):
    first = run_cli(tmp_path / "run", f"input={TAU_BENCH}")
    assert first.returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    again = run_cli(tmp_path / "run", f"input={TAU_BENCH}")
    assert again.returncode == 1 and "already holds a run" in again.stderr
    assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_cleanly_with_exit_3_and_an_interrupted_summary(tmp_path, signum):
    big = tmp_path / "big.jsonl"
    big.write_bytes(TAU_BENCH.read_bytes() * 20)
    run_dir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "hermes_pipeline", f"input={big}", f"hydra.run.dir={run_dir}",
                                "progress=log", "model.context_length=4000"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until_listed(process, run_dir / "manifest.jsonl", 5) >= 5
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 3, err
    assert "Traceback" not in err
    done = json.loads((run_dir / "summary.json").read_text())
    assert done["status"] == "interrupted" and done["exit_code"] == 3
    assert done["stopped"] == f"interrupted by {signal.Signals(signum).name}"
    rows = read_jsonl(run_dir / "manifest.jsonl")
    assert 5 <= len(rows) < 800 and done["conversations"] == len(rows)
    assert len(read_jsonl(run_dir / "transcripts" / "big.jsonl")) == len(rows)   # listed = written


def test_a_dead_endpoint_opens_the_breaker_and_exits_4(tmp_path):
    with socket.socket() as probe:          # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    result = run_cli(tmp_path / "run", f"input={TAU_BENCH}", "model.context_length=4000", "summarizer=anthropic",
                     f"auxiliary.compression.base_url=http://127.0.0.1:{port}", "summarizer.cache.enabled=false",
                     env={"ANTHROPIC_API_KEY": "dead-endpoint-test"})
    elapsed = time.monotonic() - started
    assert result.returncode == 4, result.stderr
    assert "summarizer unhealthy" in result.stderr
    run_summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert run_summary["exit_code"] == 4 and run_summary["exit_reason"].startswith("summarizer unhealthy")
    # (a compaction that only cleared tool outputs to fit the context has no summary to fall back from)
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl")
            if r["status"] == "compacted" and r["summarizer"]]
    assert rows and all(r["summarizer"] == "extractive" for r in rows)
    circuit = [r for r in rows if "circuit open" in r["fallback"]]
    assert len(circuit) >= len(rows) - 8          # at most the conversations in flight tried the endpoint
    # an endpoint that never answered: each refused attempt counts, so no conversation waited out its retries
    assert sum(r["calls"] for r in rows) <= 8 and all(r["retries"] <= 1 for r in rows)
    console = result.stdout + result.stderr          # the breaker is said once, not once per conversation
    assert console.count("circuit open after") == 1, console[-3000:]
    print(f"dead endpoint: {len(rows)} conversations, {elapsed:.1f} s")


def test_a_wrong_endpoint_path_opens_the_breaker_too(tmp_path):
    """A base_url with a wrong path answers 404 to every request: as useless as a dead endpoint."""
    from hermes_pipeline.testing.fake_provider import FakeProvider
    with FakeProvider() as fake:
        result = run_cli(tmp_path / "run", f"input={TAU_BENCH}", "model.context_length=4000", "summarizer=anthropic",
                         f"auxiliary.compression.base_url={fake.base_url}/v1", "summarizer.cache.enabled=false",
                         env={"ANTHROPIC_API_KEY": "wrong-path-test"})
    assert result.returncode == 4, result.stderr
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl")
            if r["status"] == "compacted" and r["summarizer"]]
    assert rows and all(r["summarizer"] == "extractive" for r in rows)
    assert "404" in rows[0]["fallback"]
    assert sum(r["calls"] for r in rows) <= 8 * 5     # the conversations in flight when it opened, at most
    assert (result.stdout + result.stderr).count("circuit open after") == 1


def test_dask_with_two_workers_writes_the_bytes_of_the_local_runner(tmp_path, clean):
    result = run_cli(tmp_path / "run", f"input={REAL}", f"output.dir={tmp_path / 'out'}", *SETTINGS,
                     "runner=dask", "runner.n_workers=2", timeout=600)
    assert result.returncode == 0, result.stderr
    assert "runner: dask, LocalCluster of 2 worker(s)" in result.stdout and "dashboard: http://" in result.stdout
    assert tree_digest(tmp_path / "out") == clean[0]
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")     # many small conversations share a task
    assert [(r["source"], r["status"], r["tokens_after"]) for r in rows] == clean[2]   # same rows, in input order
    again = run_cli(tmp_path / "run2", f"input={REAL}", f"output.dir={tmp_path / 'inc'}", "incremental=true",
                    *SETTINGS, "runner=dask", "runner.n_workers=2", timeout=600)
    assert again.returncode == 0, again.stderr
    rerun = run_cli(tmp_path / "run3", f"input={REAL}", f"output.dir={tmp_path / 'inc'}", "incremental=true",
                    *SETTINGS, "runner=dask", "runner.n_workers=2", timeout=600)
    assert rerun.returncode == 0 and json.loads((tmp_path / "run3" / "summary.json").read_text())["conversations"] == 0
    assert tree_digest(tmp_path / "inc") == clean[0]


def test_input_dot_never_reads_earlier_run_folders_back_in(tmp_path):
    (tmp_path / "chats.jsonl").write_bytes(TAU_BENCH.read_bytes())
    command = [sys.executable, "-m", "hermes_pipeline", "input=.", "quiet=true", "progress=none"]
    for _ in range(2):
        assert subprocess.run(command, cwd=tmp_path, capture_output=True).returncode == 0
    for folder in (tmp_path / "runs").glob("*/*"):
        assert [r["source"].rsplit(":", 1)[0] for r in read_jsonl(folder / "manifest.jsonl")] == ["chats.jsonl"] * 40


def test_records_quarantined_by_an_earlier_night_are_counted_while_they_stay(tmp_path):
    """Exit 2 is for what went wrong tonight; a bad line still in the archive is counted, not re-reported."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "chats.jsonl").write_bytes(TAU_BENCH.read_bytes() + b'{"id": "broken", "messages": [\n')
    first = nightly(tmp_path, "1")
    assert first.returncode == 2 and summary(tmp_path, "1")["statuses"]["quarantined"] == 1
    again = nightly(tmp_path, "2")                     # the whole file is skipped as unchanged
    assert again.returncode == 0 and summary(tmp_path, "2")["quarantined_earlier"] == 1
    assert "of which 1 quarantined by an earlier run and still in the input" in \
        (tmp_path / "runs" / "2" / "cli.log").read_text()
    with open(tmp_path / "in" / "chats.jsonl", "ab") as handle:     # changed: its lines are looked up one by one
        handle.write(TAU_BENCH.read_bytes().split(b"\n", 1)[0] + b"\n")
    third = nightly(tmp_path, "3")
    assert third.returncode == 0 and summary(tmp_path, "3")["quarantined_earlier"] == 1
    assert summary(tmp_path, "3")["conversations"] == 1
