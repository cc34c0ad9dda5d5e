"""engine=hermes: the Hermes agent's own ContextCompressor (hermes-agent, pinned, in the test environment).

The real CLI runs it on the shared long sessions (at a small context, so they are
compacted), with its summary request answered by the embedded summarizer (no key)
or sent, as Hermes writes it, to a FakeProvider on 127.0.0.1 through the real SDKs;
and a sweep compares it with the built-in compressor.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
from agent.context_compressor import SUMMARY_PREFIX as HERMES_SUMMARY_PREFIX

from hermes_pipeline.testing.fake_provider import FakeProvider, auth_error, server_error
from hermes_pipeline.transcript import message_text, pairing_problems
from testkit.accounting import check_accounting
from testkit.env import LONG_SESSIONS, ROOT, read_jsonl, run_cli, run_module, shared
from testkit.sessions import read_conversations

SAMPLES = ROOT / "samples"
HERMES_PREAMBLE = "You are a summarization agent creating a context checkpoint."   # the first words of its prompt
FROM_MODEL = "Request digest: sha256:"          # a line only the fake provider's summaries have
KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
FAKE_KEY = "hermesFAKEKEY0c1d2e3f4a5b6c7dgrepme"


def hermes_summaries(messages: list[dict]) -> list[str]:
    return [message_text(m) for m in messages if HERMES_SUMMARY_PREFIX in message_text(m)]


def test_engine_hermes_compacts_the_long_sessions_and_scores_them(tmp_path):
    sessions = shared(LONG_SESSIONS)
    run_dir = tmp_path / "run"
    result = run_cli(run_dir, f"input={sessions}", "engine=hermes", "model.context_length=16000", timeout=600)
    assert result.returncode == 2, result.stderr         # one line of the pi session is broken: quarantined
    inputs = sorted(sessions.rglob("*.jsonl"))
    assert check_accounting(run_dir, inputs, {p: run_dir / "transcripts" / p.relative_to(sessions) for p in inputs}) == []
    rows = [r for r in read_jsonl(run_dir / "manifest.jsonl") if r["status"] != "quarantined"]
    assert len(rows) == 5 and {r["status"] for r in rows} == {"compacted"}
    assert {r["engine"] for r in rows} == {"hermes"} and {r["summarizer"] for r in rows} == {"extractive"}
    for row in rows:
        assert row["tokens_after"] < row["tokens_before"] and row["summary_tokens"] > 0
        assert 0 < row["quality"]["score"] <= 1 and row["stats"]["messages_removed"] > 0
        assert sum(v["total"] for k, v in row["quality"].items() if isinstance(v, dict) and "total" in v) > 0
    # the embedded summarizer read the unpruned middle: the changed files of these sessions are all kept
    assert sum(r["quality"]["files_written"]["total"] for r in rows) >= 20
    assert all(r["quality"]["files_written"]["kept"] == r["quality"]["files_written"]["total"] for r in rows)
    outputs = sorted((run_dir / "transcripts").rglob("*.jsonl"))
    assert len(outputs) == 5
    for path in outputs:
        (conversation,) = read_conversations(path, repaired=False)
        assert pairing_problems(conversation.messages) == [], path
        (summary,) = hermes_summaries(conversation.messages)        # Hermes' own handoff message, once
        assert "--- END OF CONTEXT SUMMARY" in summary
    # what was written reads back as the same conversations, nothing set aside
    # (the pi session's broken line is kept byte for byte in the session written back, history=keep, and is set
    # aside again)
    again = run_cli(tmp_path / "again", f"input={run_dir / 'transcripts'}", "compression.enabled=false")
    assert again.returncode == 2, again.stderr
    read_again = read_jsonl(tmp_path / "again" / "manifest.jsonl")
    assert [r["source"].rsplit("/", 1)[-1] for r in read_again if r["status"] == "quarantined"] == \
        ["03-raddit-dashboard-pr.session.jsonl:31"]
    assert [r["messages_before"] for r in read_again if r["status"] != "quarantined"] == \
        [r["messages_after"] for r in rows]


def test_engine_hermes_is_built_from_the_runs_config(composed_config):
    from hermes_pipeline.components import build
    cfg = composed_config("engine=hermes", "model.context_length=600000",
                          "compression.threshold=0.6", "compression.target_ratio=0.3", "compression.protect_last_n=7")
    engine = build(cfg).engine
    compressor = engine.make()
    assert engine.name == "hermes" and compressor.name == "compressor"      # Hermes' own class
    assert (compressor.context_length, compressor.threshold_percent) == (600_000, 0.6)
    assert (compressor.protect_first_n, compressor.protect_last_n, compressor.summary_target_ratio) == (3, 7, 0.3)
    assert compressor.threshold_tokens == 360_000 and compressor.tail_token_budget == 108_000
    assert engine.should_compress(360_000) and not engine.should_compress(359_999)
    assert compressor is not engine.make()       # one per conversation: Hermes' session state never leaks


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def hermes_llm_run(run_dir: Path, fake: FakeProvider, provider: str, *extra: str, cache: Path | None = None):
    url = fake.base_url if provider == "anthropic" else fake.openai_base_url
    cache = cache or run_dir.parent / f"{run_dir.name}-cache.sqlite"
    return run_cli(run_dir, f"input={SAMPLES}", "engine=hermes", "model.context_length=8000", f"summarizer={provider}",
                   f"auxiliary.compression.base_url={url}", f"summarizer.cache.path={cache}",
                   "summarizer.retry.initial_backoff=0.01", "summarizer.retry.max_backoff=0.05", *extra,
                   env={KEYS[provider]: FAKE_KEY})


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_engine_hermes_sends_its_own_prompt_to_the_runs_endpoint(tmp_path, fake, provider):
    result = hermes_llm_run(tmp_path / "run", fake, provider)
    assert result.returncode == 0, result.stderr
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if r["status"] == "compacted"]
    assert rows and {r["engine"] for r in rows} == {"hermes"}
    assert {r["summarizer"] for r in rows} == {"anthropic:claude-sonnet-4-6" if provider == "anthropic"
                                               else "openai:gpt-4.1-mini"}
    assert {r["fallback"] for r in rows} == {None} and all(r["calls"] == 1 for r in rows)
    assert all(r["usage"]["input_tokens"] > 0 and r["quality"] is not None for r in rows)
    assert fake.request_count == len(rows)
    for request in fake.requests:
        body = request["body"]
        assert "system" not in body and len(body["messages"]) == 1      # Hermes' one user prompt, as it is
        assert body["messages"][0]["content"].startswith(HERMES_PREAMBLE)
    written = "".join(p.read_text() for p in (tmp_path / "run" / "transcripts").rglob("*.jsonl"))
    assert written.count(FROM_MODEL) == len(rows) and FAKE_KEY not in written
    # a rerun is answered by the request cache
    again = hermes_llm_run(tmp_path / "again", fake, provider, cache=tmp_path / "run-cache.sqlite")
    assert again.returncode == 0 and fake.request_count == len(rows)
    assert {r["cached"] for r in read_jsonl(tmp_path / "again" / "manifest.jsonl") if r["status"] == "compacted"} \
        == {True}


def test_engine_hermes_falls_back_to_the_embedded_summary_when_the_endpoint_fails(tmp_path, fake):
    fake.script([server_error()] * 40)
    result = hermes_llm_run(tmp_path / "run", fake, "openai", "summarizer.retry.attempts=2", "runner.concurrency=1")
    assert result.returncode == 4, result.stderr       # every compaction fell back: the summarizer is unhealthy
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if r["status"] == "compacted"]
    assert rows and {r["summarizer"] for r in rows} == {"extractive"}
    for row in rows:
        assert "openai:gpt-4.1-mini" in row["fallback"] and "used the embedded extractive summary" in row["fallback"]
    # three endpoint failures in a row (2 attempts for the first, 1 for the second): no more calls after them
    assert fake.request_count == 3
    assert "circuit open after 3 failed requests in a row" in rows[-1]["fallback"]


def test_engine_hermes_stops_the_run_on_a_rejected_key(tmp_path, fake):
    fake.script([auth_error()] * 5)
    result = hermes_llm_run(tmp_path / "run", fake, "anthropic")
    assert result.returncode == 3, result.stderr
    assert "refused the credentials or quota" in result.stderr and FAKE_KEY not in result.stderr + result.stdout


def test_engine_hermes_without_hermes_agent_is_a_config_error_naming_the_extra(tmp_path):
    shadow = tmp_path / "no-hermes"       # an `agent` package without hermes-agent's modules in it
    (shadow / "agent").mkdir(parents=True)
    (shadow / "agent" / "__init__.py").write_text("")
    result = run_cli(tmp_path / "run", f"input={SAMPLES}", "engine=hermes", env={"PYTHONPATH": str(shadow)})
    assert result.returncode == 1
    assert "engine=hermes runs the Hermes agent's own ContextCompressor" in result.stderr
    assert "pip install 'hermes-pipeline[hermes]'" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "manifest.jsonl").exists()


def test_a_sweep_compares_the_compressor_and_hermes(tmp_path):
    folder = tmp_path / "sweep"
    result = run_module("hermes_pipeline", "-m", f"hydra.sweep.dir={folder}", "progress=none", "quiet=true",
                        f"input={SAMPLES}", "model.context_length=8000", "engine=compressor,hermes")
    assert result.returncode == 0, result.stderr[-3000:]
    with open(folder / "sweep.csv", newline="") as handle:
        points = {row["engine"]: row for row in csv.DictReader(handle)}
    assert set(points) == {"compressor", "hermes"}
    for point in points.values():
        assert point["status"] == "complete" and int(point["compacted"]) > 0 and 0 < float(point["quality_score"]) <= 1
    assert points["compressor"]["transcripts_sha256"] != points["hermes"]["transcripts_sha256"]
    report = (folder / "sweep.md").read_text()
    assert "| `compressor` |" in report and "| `hermes` |" in report
