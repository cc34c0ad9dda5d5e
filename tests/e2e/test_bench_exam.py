"""The judged benchmark end to end on a held-out cut of a real log, the fake model answering its files."""
import json
import subprocess
import sys

from testkit.env import CORPUS, LONG_SESSIONS, shared

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def bench(work, *args):
    return subprocess.run([sys.executable, "-m", "benchmarks.bench_exam", "--work", str(work), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def answer_all(work):
    for requests in sorted((work / "requests").glob("*.jsonl")):
        subprocess.run([sys.executable, "-m", "hermes_pipeline.testing.answer_file", str(requests),
                        str(work / "results" / f"{requests.stem}-fake.jsonl")], cwd=ROOT, check=True, timeout=120)
        requests.unlink()


def test_a_cut_of_a_log_the_agent_never_compacted_is_judged_without_the_agent_condition(tmp_path):
    log = shared(CORPUS / "claude-reliability" / "python-to-rust-port.transcript.jsonl")
    cuts = tmp_path / "cuts.json"
    cuts.write_text(json.dumps([{"file": str(log), "line": 60, "context": 8000}]))
    work = tmp_path / "work"
    refused = bench(work, "--events", str(cuts), "--conditions", "default,agent")
    assert refused.returncode == 2 and "agent" in refused.stderr
    stages = []
    for _ in range(4):      # questions, then answers, then grades, then the table
        done = bench(work, "--events", str(cuts), "--conditions", "default,head_tail")
        if done.returncode == 0:
            break
        assert done.returncode == 3, done.stderr
        stages.append(sorted(p.name for p in (work / "requests").glob("*.jsonl")))
        answer_all(work)
    assert stages == [["questions.jsonl"], ["answers-default.jsonl", "answers-head_tail.jsonl"], ["grades.jsonl"]]
    event = json.loads((work / "events.json").read_text())
    assert [(e["kind"], e["line"], e["context"]) for e in event.values()] == [("cut", 60, 8000)]
    rows = json.loads((work / "judged.json").read_text())
    assert {r["condition"] for r in rows} == {"default", "head_tail"}
    assert all(r["judged"] is not None and 0 <= r["judged"] <= 5 and r["error"] is None for r in rows)


def test_a_compaction_event_can_be_judged_at_another_context_than_the_agents(tmp_path):
    log = shared(LONG_SESSIONS / "vsla-claude-sessions" / "0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl")
    cuts = tmp_path / "cuts.json"
    cuts.write_text(json.dumps([{"file": str(log), "line": 451, "context": 32000}]))
    done = bench(tmp_path / "work", "--events", str(cuts), "--conditions", "default,agent")
    assert done.returncode == 3, done.stderr
    event = json.loads((tmp_path / "work" / "events.json").read_text())
    assert [(e["kind"], e["context"]) for e in event.values()] == [("claude-code", 32000)]


def test_a_cuts_file_of_the_wrong_shape_or_an_unknown_condition_is_a_usage_error(tmp_path):
    log = shared(CORPUS / "claude-reliability" / "python-to-rust-port.transcript.jsonl")
    wrong = tmp_path / "events.json"
    wrong.write_text(json.dumps({"x-98": {"file": str(log), "line": 98}}))
    refused = bench(tmp_path / "work", "--events", str(wrong))
    assert refused.returncode != 0 and "not a list of" in refused.stderr
    missing = tmp_path / "cuts.json"
    missing.write_text(json.dumps([{"file": "no/such.jsonl", "line": 3, "context": 4000}]))
    refused = bench(tmp_path / "work", "--events", str(missing))
    assert refused.returncode != 0 and "no/such.jsonl is not a file" in refused.stderr
    cuts = tmp_path / "good.json"
    cuts.write_text(json.dumps([{"file": str(log), "line": 60, "context": 8000}]))
    refused = bench(tmp_path / "work", "--events", str(cuts), "--conditions", "default,foo")
    assert refused.returncode == 2 and "unknown condition(s) foo" in refused.stderr and "head_tail" in refused.stderr
    assert not (tmp_path / "work").exists()       # refused before anything is written


def test_a_setting_given_with_set_is_the_one_judged(tmp_path):
    log = shared(LONG_SESSIONS / "vsla-claude-sessions" / "d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl")
    cuts = tmp_path / "cuts.json"
    cuts.write_text(json.dumps([{"file": str(log), "line": 242, "context": 32000}]))
    summaries = {}
    for name, extra in (("default", ()), ("wider", ("--set", "compression.summary_context_share=0.1"))):
        done = bench(tmp_path / name, "--events", str(cuts), "--conditions", "embedded_summary", *extra)
        assert done.returncode == 3, done.stderr
        context = json.loads(next((tmp_path / name / "contexts").glob("*.embedded_summary.json")).read_text())
        summaries[name] = context[0]["content"]
    assert len(summaries["wider"]) > 1.5 * len(summaries["default"])      # 3,200 tokens of budget, not 1,600
