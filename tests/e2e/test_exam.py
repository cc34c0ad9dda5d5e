"""The judged exam (exam.enabled=true): the real CLI and SDKs against the fake provider, which writes
questions from the conversation as read, answers them from the context it is given, and grades them
(hermes_pipeline/testing/fake_exam.py): so a score says what a compaction kept."""
from __future__ import annotations

import csv
import json

import pytest

from hermes_pipeline.testing.answer_file import answer_file
from hermes_pipeline.testing.fake_provider import FakeProvider, garbled
from testkit.env import LONG_SESSIONS, ROOT, read_jsonl, run_cli, run_module, shared

SAMPLES = ROOT / "samples"
MODELS = {"anthropic": ("ANTHROPIC_API_KEY", "/v1/messages"), "openai": ("OPENAI_API_KEY", "/v1/chat/completions")}
EXAM = ("exam.enabled=true", "exam.sample=2", "exam.questions=6")


def cli(run_dir, provider, fake, *extra, cache=None, env=None):
    key_env, _ = MODELS[provider]
    url = fake.base_url if provider == "anthropic" else fake.openai_base_url
    return run_cli(run_dir, f"input={SAMPLES}", f"summarizer={provider}", "model.context_length=8000",
                   f"auxiliary.compression.base_url={url}", "summarizer.retry.initial_backoff=0.01",
                   f"summarizer.cache.path={cache or run_dir.parent / 'cache.sqlite'}", *extra,
                   env={key_env: "test-key", **(env or {})})


def judged(run_dir) -> list[dict]:
    """The exam rows without what they cost (a replay is billed when its answers are first used)."""
    return [{k: v for k, v in row.items() if k not in ("calls", "usage")} for row in read_jsonl(run_dir / "exam.jsonl")]


def summary(run_dir) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def transcripts(run_dir) -> dict:
    root = run_dir / "transcripts"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def exam_requests(fake, opening: str) -> list[str]:
    """The user turns of the requests whose instructions open with `opening`."""
    found = []
    for request in fake.requests:
        body = request["body"]
        system = body.get("system") or [m for m in body.get("messages", []) if m["role"] == "system"]
        user = [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
        if json.dumps(system).lstrip('[{"typetxcon:, ').startswith(opening) or opening in json.dumps(system)[:200]:
            found.append(json.dumps(user))
    return found


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_the_exam_judges_what_was_written_blind_and_changes_none_of_it(tmp_path, provider):
    with FakeProvider() as fake:
        plain = cli(tmp_path / "plain", provider, fake, cache=tmp_path / "plain.sqlite")
        assert plain.returncode == 0, plain.stderr[-3000:]
        result = cli(tmp_path / "run", provider, fake, *EXAM, "exam.baselines=[head_tail,full]")
        assert result.returncode == 0, result.stderr[-3000:]
        answers, grades = exam_requests(fake, "You are resuming"), exam_requests(fake, "You grade the answers")
    assert transcripts(tmp_path / "run") == transcripts(tmp_path / "plain")     # not a byte changed
    exam = summary(tmp_path / "run")["exam"]
    assert exam["examined"] == 2 and exam["errors"] == 0 and exam["calls"] == 2 * (1 + 3 + 3)
    # the uncompacted conversation answers every question; without the summary, less is known
    assert exam["baselines"]["full"] == 5.0
    assert exam["baselines"]["head_tail"] <= exam["score"] < 5.0
    assert set(exam["per_kind"]) <= {"recall", "artifact", "continuation", "decision"} and exam["cost_usd"] > 0
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if "exam" in r]
    assert len(rows) == 2 and rows == [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl")
                                       if r["source"] in {e["source"] for e in read_jsonl(tmp_path / "run" / "exam.jsonl")}]
    for row in rows:
        assert len(row["exam"]["questions"]) == 6 and set(row["exam"]["answers"]) == {"compacted", "head_tail", "full"}
        assert all(len(g) == 6 and all(0 <= x["grade"] <= 5 for x in g) for g in row["exam"]["grades"].values())
    # blind: an answering request sees a context and the questions, never the conversation as read nor the
    # references; a grading request sees the references and answers, never a context
    assert len(answers) == 6 and not any("<removed>" in a or "Reference:" in a for a in answers)
    assert len(grades) == 6 and not any("<context>" in g for g in grades)
    assert "exam, judged" in result.stdout


def test_a_rerun_asks_nothing_again_and_scores_the_same(tmp_path):
    with FakeProvider() as fake:
        assert cli(tmp_path / "one", "anthropic", fake, *EXAM).returncode == 0
        asked = fake.request_count
        again = cli(tmp_path / "two", "anthropic", fake, *EXAM)
        assert again.returncode == 0 and fake.request_count == asked     # the request cache answered all
    one, two = summary(tmp_path / "one")["exam"], summary(tmp_path / "two")["exam"]
    assert one["score"] == two["score"] and one["per_kind"] == two["per_kind"]
    assert judged(tmp_path / "one") == judged(tmp_path / "two") and two["calls"] == 0 < one["calls"]


def test_in_batch_mode_the_exam_goes_through_the_batch_api_too(tmp_path):
    with FakeProvider() as fake:
        result = cli(tmp_path / "run", "anthropic", fake, *EXAM, "summarizer.batch.enabled=true",
                     "summarizer.batch.poll_s=0.05")
        assert result.returncode == 0, result.stderr[-3000:]
        plain_calls = fake.path_counts.get("/v1/messages", 0)
    assert plain_calls == 0
    exam = summary(tmp_path / "run")["exam"]
    assert exam["examined"] == 2 and exam["errors"] == 0 and exam["score"] is not None
    with FakeProvider() as fake:        # the same exam as plain calls: batches cost half
        assert cli(tmp_path / "plain", "anthropic", fake, *EXAM, cache=tmp_path / "p.sqlite").returncode == 0
    plain = summary(tmp_path / "plain")["exam"]
    assert plain["score"] == exam["score"] and exam["cost_usd"] < 0.6 * plain["cost_usd"]


def test_requests_out_answers_in_finishes_a_run_the_same_as_calls_do(tmp_path):
    """No key and no endpoint: each round writes what it needs answered and stops (exit 3); the answers are
    imported by the next; the end is the run the fake provider answers call by call, byte for byte."""
    requests, rounds, results = tmp_path / "requests.jsonl", 0, []
    while True:
        rounds += 1
        run_dir = tmp_path / f"round{rounds}"
        result = run_cli(run_dir, f"input={SAMPLES}", "summarizer=anthropic", "model.context_length=8000", *EXAM,
                         f"summarizer.cache.path={tmp_path / 'cache.sqlite'}", f"summarizer.batch.export_to={requests}",
                         f"summarizer.batch.import_from=[{','.join(map(str, results))}]")
        if result.returncode == 0:
            break
        assert result.returncode == 3, result.stderr[-3000:]
        assert "summarizer.batch.import_from" in summary(run_dir)["stopped"] and requests.stat().st_size
        results.append(tmp_path / f"results{rounds}.jsonl")
        answer_file(requests, results[-1])        # any model, anywhere: here the fake, offline
        assert rounds < 6
    assert rounds == 5          # summaries, then the exam's questions, answers and grades
    with FakeProvider() as fake:
        assert cli(tmp_path / "calls", "anthropic", fake, *EXAM, cache=tmp_path / "calls.sqlite").returncode == 0
    assert transcripts(run_dir) == transcripts(tmp_path / "calls")
    exported, called = summary(run_dir)["exam"], summary(tmp_path / "calls")["exam"]
    assert exported["score"] == called["score"] and exported["per_kind"] == called["per_kind"]
    # replayed: the same answers again, into a new cache, give the same bytes, with nothing left to ask
    again = run_cli(tmp_path / "again", f"input={SAMPLES}", "summarizer=anthropic", "model.context_length=8000", *EXAM,
                    f"summarizer.cache.path={tmp_path / 'fresh.sqlite'}", f"summarizer.batch.export_to={requests}",
                    f"summarizer.batch.import_from=[{','.join(map(str, results))}]")
    assert again.returncode == 0, again.stderr[-3000:]
    assert transcripts(tmp_path / "again") == transcripts(run_dir)
    assert judged(tmp_path / "again") == judged(run_dir)


def test_a_reply_in_the_wrong_shape_says_why_and_leaves_the_compaction_and_the_exit_alone(tmp_path):
    with FakeProvider() as fake:
        plain = cli(tmp_path / "plain", "anthropic", fake, cache=tmp_path / "plain.sqlite")
        fake.script_matching("You write an exam", [garbled()] * 4)   # every attempt of the questions
        result = cli(tmp_path / "run", "anthropic", fake, *EXAM, "summarizer.retry.attempts=2")
    assert result.returncode == 0 == plain.returncode, result.stderr[-3000:]
    assert transcripts(tmp_path / "run") == transcripts(tmp_path / "plain")
    exam = summary(tmp_path / "run")["exam"]
    assert exam["errors"] == 2 and exam["examined"] == 0 and exam["score"] is None
    for row in read_jsonl(tmp_path / "run" / "exam.jsonl"):
        assert row["error"].startswith("questions:") and "not in the asked shape" in row["error"]


def test_an_exam_with_no_model_to_ask_is_a_config_error(tmp_path):
    result = run_cli(tmp_path / "run", f"input={SAMPLES}", "exam.enabled=true")
    assert result.returncode == 1 and not (tmp_path / "run" / "manifest.jsonl").exists()
    assert "exam.enabled=true needs a model" in result.stderr and "summarizer=anthropic" in result.stderr
    wrong = run_cli(tmp_path / "run2", f"input={SAMPLES}", "summarizer=anthropic", "exam.enabled=true",
                    "exam.baselines=[nothing]", env={"ANTHROPIC_API_KEY": "k"})
    assert wrong.returncode == 1 and "exam.baselines: nothing" in wrong.stderr


def test_a_sweep_ranks_its_points_by_the_judged_score(tmp_path):
    with FakeProvider() as fake:
        result = run_module("hermes_pipeline", "-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "progress=none",
                            f"input={SAMPLES}", "summarizer=anthropic", "model.context_length=8000",
                            f"auxiliary.compression.base_url={fake.base_url}", *EXAM,
                            f"summarizer.cache.path={tmp_path / 'cache.sqlite'}", "compression.target_ratio=0.1,0.6",
                            env={"ANTHROPIC_API_KEY": "test-key"})
    assert result.returncode == 0, result.stderr[-3000:]
    report = (tmp_path / "sweep" / "sweep.md").read_text()
    assert "Quality: the judged exam's score" in report and "judged (0-5)" in report
    rows = list(csv.DictReader(open(tmp_path / "sweep" / "sweep.csv")))
    assert len(rows) == 2 and all(float(r["exam_score"]) >= 0 and int(r["exam_examined"]) == 2 for r in rows)
    head = next(line.split(" | ") for line in report.splitlines() if line.startswith("| front"))
    table = [line.split(" | ") for line in report.splitlines() if line.startswith("| ") and "`0." in line]
    # the quality the front is drawn on is the judged score
    assert len(table) == 2 and all(round(float(c[head.index("quality")]), 2) == float(c[head.index("judged (0-5)")])
                                for c in table)


def test_the_score_command_gives_a_runs_own_quality_score(tmp_path):
    result = run_cli(tmp_path / "run", f"input={SAMPLES}", "model.context_length=8000")
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if r["status"] == "compacted"}
    scored = {}
    for path in sorted(SAMPLES.glob("*.jsonl")):
        out = run_module("hermes_pipeline.reports.score", str(path), str(tmp_path / "run" / "transcripts" / path.name),
                         "--json")
        assert out.returncode == 0, out.stderr
        scored.update({s["id"]: s for s in map(json.loads, out.stdout.splitlines())})
    assert rows and all(scored[i]["score"] == row["quality"]["score"] for i, row in rows.items())
    assert all(scored[i]["missed"] == row["quality"]["missed"]["facts"] for i, row in rows.items())


def test_the_score_command_scores_an_agents_own_compaction(tmp_path):
    """A Claude Code log that goes on after the agent's compaction is read as what the agent resumed with."""
    log = shared(LONG_SESSIONS / "vsla-claude-sessions" / "0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl")
    lines = log.read_bytes().split(b"\n")
    cut = next(n for n, line in enumerate(lines) if b'"isCompactSummary":true' in line)
    (tmp_path / "before.jsonl").write_bytes(b"\n".join(lines[:cut]) + b"\n")
    agent = run_module("hermes_pipeline.reports.score", str(tmp_path / "before.jsonl"), str(log), "--json")
    assert agent.returncode == 0, agent.stderr
    (found,) = map(json.loads, agent.stdout.splitlines())
    assert 0 < found["score"] < 1 and set(found["per_kind"]) <= {"recall", "artifact", "continuation", "decision"}
