"""The real command line, end to end, on the real corpus and on made-up files."""
import hashlib
import json
from pathlib import Path

import pytest

from testkit.env import TAU_BENCH, read_jsonl, run_cli, run_module
from testkit.validity import problems


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tau_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("tau") / "run"
    before = _digest(TAU_BENCH)
    result = run_cli(run_dir, f"input={TAU_BENCH}", "model.context_length=4000", "compression.protect_last_n=4")
    assert _digest(TAU_BENCH) == before   # the input is never touched
    return result, run_dir


def test_tau_bench_all_processed_and_valid(tau_run):
    result, run_dir = tau_run
    assert result.returncode == 0, result.stderr
    assert "Prompt caching: ENABLED (Claude via Anthropic, 5m TTL)" in result.stdout
    inputs = read_jsonl(TAU_BENCH)
    rows = read_jsonl(run_dir / "manifest.jsonl")
    assert len(inputs) == 40 and len(rows) == 40 and len({r["source"] for r in rows}) == 40
    assert {r["status"] for r in rows} <= {"compacted", "unchanged"}
    assert sum(r["status"] == "compacted" for r in rows) >= 30
    outputs = read_jsonl(run_dir / "transcripts" / TAU_BENCH.name)
    assert [o["id"] for o in outputs] == [i["id"] for i in inputs]
    for original, compacted, row in zip(inputs, outputs, rows):
        assert problems(original["messages"], compacted["messages"]) == [], original["id"]
        assert compacted["metadata"] == original["metadata"]            # other fields carried through
        assert row["messages_after"] == len(compacted["messages"])
        assert row["trigger"] in ("agent", "hygiene", "none")
        if row["status"] == "unchanged":
            assert compacted == original


def test_run_folder_contract(tau_run):
    _, run_dir = tau_run
    assert (run_dir / ".hydra" / "config.yaml").exists() and (run_dir / ".hydra" / "overrides.yaml").exists()
    assert (run_dir / "quarantine.jsonl").read_text() == ""
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in ("statuses", "tokens_before", "tokens_after", "wall_seconds", "mb_per_second"):
        assert key in summary
    assert 0 < summary["process_cpu_seconds"] < 600     # this process's own CPU, start-up included
    rows = read_jsonl(run_dir / "manifest.jsonl")
    assert summary["tokens_before"] == sum(r["tokens_before"] for r in rows)
    assert summary["statuses"]["compacted"] == sum(r["status"] == "compacted" for r in rows)
    fields = {"id", "source", "status", "trigger", "messages_before", "messages_after", "tokens_before",
              "tokens_after", "summary_tokens", "summarizer", "fallback", "error"}
    assert all(fields <= set(r) for r in rows)


def test_two_runs_give_byte_identical_transcripts(tau_run, tmp_path):
    """The second run in a new interpreter (another hash seed, nothing imported), the first forked warm."""
    _, first = tau_run
    result = run_cli(tmp_path / "again", f"input={TAU_BENCH}", "model.context_length=4000", "compression.protect_last_n=4",
                     fresh=True)
    assert result.returncode == 0
    assert (tmp_path / "again" / "transcripts" / TAU_BENCH.name).read_bytes() == \
        (first / "transcripts" / TAU_BENCH.name).read_bytes()


def _message_file(path: Path, n: int) -> list[dict]:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "start"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": f"step {i}"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i} " * 150})
        messages.append({"role": "assistant", "content": f"did {i}"})
        messages.append({"role": "user", "content": f"next {i}"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    return messages


def test_message_per_line_files_in_a_directory_keep_layout_and_names(tmp_path):
    inputs = tmp_path / "in"
    big = _message_file(inputs / "team-a" / "session-1.jsonl", 30)
    small = _message_file(inputs / "session-2.jsonl", 1)
    result = run_cli(tmp_path / "run", f"input={inputs}", "model.context_length=8000", "compression.protect_last_n=4")
    assert result.returncode == 0, result.stderr
    out_big = read_jsonl(tmp_path / "run" / "transcripts" / "team-a" / "session-1.jsonl")
    out_small = read_jsonl(tmp_path / "run" / "transcripts" / "session-2.jsonl")
    assert all("role" in m for m in out_big) and len(out_big) < len(big)
    assert problems(big, out_big) == []
    assert out_small == small
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl")}
    assert rows["session-1"]["status"] == "compacted" and rows["session-2"]["status"] == "unchanged"


def test_glob_input(tmp_path):
    _message_file(tmp_path / "data" / "x" / "a.jsonl", 2)
    _message_file(tmp_path / "data" / "y" / "b.jsonl", 2)
    result = run_cli(tmp_path / "run", f"input={tmp_path}/data/**/*.jsonl")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "run" / "transcripts" / "x" / "a.jsonl").exists()
    assert (tmp_path / "run" / "transcripts" / "y" / "b.jsonl").exists()


def test_a_broken_line_is_quarantined_and_the_run_goes_on(tmp_path):
    source = tmp_path / "mixed.jsonl"
    lines = TAU_BENCH.read_text().splitlines()[:3]
    source.write_text(lines[0] + "\n" + '{"id": "broken", "messages": [\n' + lines[1] + "\n" + "[1, 2]\n" + lines[2] + "\n")
    result = run_cli(tmp_path / "run", f"input={source}")
    assert result.returncode == 2
    quarantined = read_jsonl(tmp_path / "run" / "quarantine.jsonl")
    assert [q["source"].rsplit(":", 1)[1] for q in quarantined] == ["2", "4"]
    assert "malformed JSON" in quarantined[0]["reason"] and str(source) in quarantined[0]["reason"]
    assert quarantined[0]["raw"].startswith('{"id": "broken"')
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert len(rows) == 5 and sum(r["status"] == "quarantined" for r in rows) == 2
    assert len(read_jsonl(tmp_path / "run" / "transcripts" / "mixed.jsonl")) == 3


def test_no_key_in_the_run_folder(tmp_path):
    fake_key = "sk-ant-api03-" + "Z9y8X7w6" * 8
    result = run_cli(tmp_path / "run", "input=samples", env={"ANTHROPIC_API_KEY": fake_key})
    assert result.returncode == 0, result.stderr
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert fake_key not in path.read_text(errors="replace"), path


def test_a_sweep_writes_one_run_folder_per_point(tmp_path):
    sweep = tmp_path / "sweep"
    result = run_module("hermes_pipeline", "-m", f"hydra.sweep.dir={sweep}", "progress=none", f"input={TAU_BENCH}",
                        "model.context_length=6000,12000", "compression.protect_last_n=4")
    assert result.returncode == 0, result.stderr
    summaries = [json.loads((sweep / str(i) / "summary.json").read_text()) for i in (0, 1)]
    assert summaries[0]["statuses"]["compacted"] > summaries[1]["statuses"]["compacted"]


def test_empty_files_and_tool_pairing_problems_in_the_input(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "empty.jsonl").write_text("\n\n")
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}
    unanswered = {"id": "unanswered", "messages": [{"role": "user", "content": "go"}, call]}
    orphan = {"id": "orphan", "messages": [{"role": "user", "content": "go"},
                                           {"role": "tool", "tool_call_id": "zz", "content": "lost?"}]}
    (inputs / "pairs.jsonl").write_text(json.dumps(unanswered) + "\n" + json.dumps(orphan) + "\n")
    result = run_cli(tmp_path / "run", f"input={inputs}")
    assert result.returncode == 2   # the empty file
    rows = {r["source"].rsplit("/", 1)[1]: r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl")}
    assert rows["empty.jsonl:0"]["status"] == "quarantined" and "empty file" in rows["empty.jsonl:0"]["error"]
    assert rows["pairs.jsonl:1"]["status"] == "unchanged"
    assert rows["pairs.jsonl:1"]["repairs"] == ["added 1 stub result(s) for tool calls that had none"]
    assert rows["pairs.jsonl:2"]["status"] == "unchanged"
    assert rows["pairs.jsonl:2"]["repairs"] == ["added 1 placeholder call(s) for tool results that had none"]
    answered, kept = read_jsonl(tmp_path / "run" / "transcripts" / "pairs.jsonl")
    assert answered["messages"][-1]["role"] == "tool" and answered["messages"][-1]["tool_call_id"] == "c1"
    assert kept["messages"][-1] == orphan["messages"][-1]                 # the result itself is kept
    assert kept["messages"][-2]["tool_calls"][0]["id"] == "zz"            # behind a labelled placeholder call
    assert kept["messages"][-2]["tool_calls"][0]["function"]["name"] == "unknown_tool"


@pytest.mark.parametrize("runner", ["runner.processes=2", "runner.concurrency=4"])
def test_worker_processes_and_threads_give_the_same_bytes(tau_run, tmp_path, runner):
    _, first = tau_run
    result = run_cli(tmp_path / "par", f"input={TAU_BENCH}", "model.context_length=4000",
                     "compression.protect_last_n=4", runner)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "par" / "transcripts" / TAU_BENCH.name).read_bytes() == \
        (first / "transcripts" / TAU_BENCH.name).read_bytes()
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds" and not k.endswith(".seconds")} for r in rows]
    assert strip(read_jsonl(tmp_path / "par" / "manifest.jsonl")) == strip(read_jsonl(first / "manifest.jsonl"))
