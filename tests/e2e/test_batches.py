"""summarizer.batch.enabled=true: the real CLI and SDKs against the fake provider's batch APIs.

The fake answers each batch item as it answers the request alone, says "in progress" for
two looks, and can be scripted with items that error or expire and looks that fail.
"""
from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys

import pytest

from hermes_pipeline.testing.fake_provider import FakeProvider, server_error
from testkit.env import ROOT, read_jsonl, run_cli
from testkit.synth import write_sessions

MODELS = {"anthropic": ("claude-sonnet-4-6", "ANTHROPIC_API_KEY", "/v1/messages"),   # the summary model
          "openai": ("gpt-4o", "OPENAI_API_KEY", "/v1/chat/completions")}
KEY = "hermesBATCHKEY5c1e9a7grepme"
BATCH = ("summarizer.batch.enabled=true", "summarizer.batch.poll_s=0.05")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    path = tmp_path_factory.mktemp("batch-inputs") / "sessions.jsonl"
    write_sessions(path, range(300, 310), n_messages=50, target_tokens=7000)     # 10 compact at 8K
    return path


def cli(run_dir, provider, fake, source, *extra, env=None):
    model, key_env, _ = MODELS[provider]
    url = fake.base_url if provider == "anthropic" else fake.openai_base_url
    return run_cli(run_dir, f"input={source}", f"summarizer={provider}", f"model={model}", "model.context_length=8000",
                   f"auxiliary.compression.base_url={url}", "summarizer.retry.initial_backoff=0.01", *extra,
                   env={key_env: KEY, **(env or {})})


def compacted(run_dir):
    return [r for r in read_jsonl(run_dir / "manifest.jsonl") if r["status"] == "compacted"]


def summary(run_dir) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def plain_calls(fake, provider) -> int:
    return fake.path_counts.get(MODELS[provider][2], 0)


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_batch_with_errored_and_expired_items_and_a_failing_poll(tmp_path, sessions, provider):
    with FakeProvider() as fake:
        fake.batches.outcomes.extend([None, "errored", None, None, "expired"])
        fake.batches.script_polls([server_error(500)])          # the first look at the batch fails
        result = cli(tmp_path / "run", provider, fake, sessions, *BATCH, f"summarizer.cache.path={tmp_path / 'c'}")
        assert result.returncode == 0, result.stderr[-3000:]
        assert dict(fake.batches.created) == {provider: 1}
        plain = plain_calls(fake, provider)
    rows = compacted(tmp_path / "run")
    label = f"{provider}:{MODELS[provider][0]}"
    assert len(rows) == 10 and all(r["summarizer"] == label and r["fallback"] is None for r in rows)
    by_batch = [r for r in rows if r["summary_via"] == "batch"]
    by_call = [r for r in rows if r["summary_via"] == "call"]
    assert len(by_batch) == 8 and all(r["calls"] == 0 and r["batch_items"] == 1 for r in by_batch)
    # plain calls only for the two items the batch did not deliver
    assert len(by_call) == 2 and all(r["calls"] == 1 and r["batch_items"] == 0 for r in by_call)
    assert plain == 2
    totals = summary(tmp_path / "run")
    assert totals["summary_via"] == {"batch": 8, "call": 2} and totals["summarizer_batch_items"] == 8
    assert totals["summarizer_calls"] == 2
    for kind in ("input_tokens", "output_tokens"):
        assert totals["summarizer_usage_batch"][kind] == sum(r["usage_batch"].get(kind, 0) for r in by_batch) > 0
    events = [json.loads(line) for line in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["submitted", "collected"] and events[0]["items"] == 10
    assert events[1]["states"] == {"succeeded": 8, "errored": 1, "expired": 1} and events[1]["plain_calls"] == 2
    assert json.loads((tmp_path / "run" / "batches.json").read_text()) == {"batches": []}   # all collected
    log = (tmp_path / "run" / "cli.log").read_text()
    assert "poll 1 failed" in log and "2 request(s) go as plain calls" in log
    for path in (tmp_path / "run").rglob("*"):
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_batch_costs_at_most_0_6_of_plain_calls(tmp_path, sessions, provider):
    with FakeProvider() as fake:
        plain = cli(tmp_path / "plain", provider, fake, sessions, f"summarizer.cache.path={tmp_path / 'c1'}")
        batch = cli(tmp_path / "batch", provider, fake, sessions, *BATCH, f"summarizer.cache.path={tmp_path / 'c2'}")
    assert plain.returncode == 0 and batch.returncode == 0, batch.stderr[-3000:]
    plain_sum, batch_sum = summary(tmp_path / "plain"), summary(tmp_path / "batch")
    assert batch_sum["summary_via"] == {"batch": 10} and plain_sum["summary_via"] == {"call": 10}
    ratio = batch_sum["estimated_cost_usd"]["summarizer"] / plain_sum["estimated_cost_usd"]["summarizer"]
    assert ratio <= 0.6, ratio
    # the replayed bill prices the live agent's summaries at the batch price too
    assert batch_sum["replay"]["summary_usd"] == pytest.approx(0.5 * plain_sum["replay"]["summary_usd"], rel=1e-3)
    # the same summaries, the same output
    assert (tmp_path / "plain" / "transcripts" / sessions.name).read_bytes() == \
        (tmp_path / "batch" / "transcripts" / sessions.name).read_bytes()
    print(f"{provider}: batch / plain summarizer cost = {ratio:.3f}")


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_kill_9_while_polling_then_the_next_run_attaches_to_the_same_batch(tmp_path, sessions, provider):
    out, cache = tmp_path / "out", f"summarizer.cache.path={tmp_path / 'c'}"
    nightly = (f"output.dir={out}", "incremental=true", *BATCH, cache)
    with FakeProvider() as fake:
        killed = cli(tmp_path / "runs" / "1", provider, fake, sessions, *nightly, env={"HERMES_FAULT": "batch_poll:1"})
        assert killed.returncode == -signal.SIGKILL
        ledger = json.loads((out / ".hermes" / "batches.json").read_text())["batches"]
        assert len(ledger) == 1 and len(ledger[0]["keys"]) == 10      # written down before the first poll
        again = cli(tmp_path / "runs" / "2", provider, fake, sessions, *nightly)
        assert again.returncode == 0, again.stderr[-3000:]
        assert dict(fake.batches.created) == {provider: 1}            # no new batch for the same requests
        assert plain_calls(fake, provider) == 0
    rows = compacted(tmp_path / "runs" / "2")
    assert len(rows) == 10 and all(r["summary_via"] == "batch" and r["fallback"] is None for r in rows)
    assert f"attached to batch {ledger[0]['id']}" in (tmp_path / "runs" / "2" / "cli.log").read_text()
    assert json.loads((out / ".hermes" / "batches.json").read_text()) == {"batches": []}
    assert summary(tmp_path / "runs" / "1")["status"] == "interrupted"
    assert summary(tmp_path / "runs" / "2")["summarizer_batch_items"] == 10     # billed by the run that collected


def test_a_batch_nobody_needs_any_more_is_canceled(tmp_path, sessions):
    out, cache = tmp_path / "out", f"summarizer.cache.path={tmp_path / 'c'}"
    nightly = (f"output.dir={out}", "incremental=true", *BATCH, cache)
    with FakeProvider() as fake:
        killed = cli(tmp_path / "runs" / "1", "anthropic", fake, sessions, *nightly,
                     env={"HERMES_FAULT": "batch_poll:1"})
        assert killed.returncode == -signal.SIGKILL
        [old] = json.loads((out / ".hermes" / "batches.json").read_text())["batches"]
        # whole tool outputs: other requests; the old batch's are wanted by no conversation
        again = cli(tmp_path / "runs" / "2", "anthropic", fake, sessions, *nightly, "summarizer.input=full")
        assert again.returncode == 0, again.stderr[-3000:]
        assert fake.path_counts.get(f"/v1/messages/batches/{old['id']}/cancel") == 1
        assert fake.batches.created["anthropic"] == 2
    events = [json.loads(line) for line in (tmp_path / "runs" / "2" / "batches.jsonl").read_text().splitlines()]
    assert events[0] == {**events[0], "event": "canceled", "batch": old["id"],
                         "why": "its requests are no longer needed"}
    assert json.loads((out / ".hermes" / "batches.json").read_text()) == {"batches": []}


def test_split_and_merge_in_batches(tmp_path, sessions):
    """Requests too long for the model come back errored: their parts go in the next batch, the merges in
    the one after, and every summary is the model's, paid at the batch price."""
    with FakeProvider() as fake:
        fake.max_input_chars = 20000
        result = cli(tmp_path / "run", "anthropic", fake, sessions, *BATCH, "summarizer.input=full",
                     f"summarizer.cache.path={tmp_path / 'c'}")
        assert result.returncode == 0, result.stderr[-3000:]
        assert plain_calls(fake, "anthropic") == 0
        rounds = fake.batches.created["anthropic"]
    rows = compacted(tmp_path / "run")
    split = [r for r in rows if (r["fallback"] or "").startswith("split-merged:")]
    assert split and rounds == 3
    assert all(r["summary_via"] == "batch" and r["calls"] == 0 for r in rows)
    assert all(r["batch_items"] == 3 for r in split)          # two parts and their merge


def test_the_documented_batch_dry_run(tmp_path):
    """The dry run of docs/summaries.md: the fake provider's CLI with its batch flags, and the documented command."""
    text = (ROOT / "docs" / "summaries.md").read_text().replace("\\\n", " ")
    server = next(line for line in text.splitlines() if "fake_provider --port" in line and "--batch-" in line)
    run = next(line for line in text.splitlines() if "summarizer.batch.enabled=true" in line and "127.0.0.1" in line)
    server_args = shlex.split(server.split("&")[0])
    words = shlex.split(run.split("#")[0])
    overrides = words[next(i for i, w in enumerate(words) if w.endswith("hermes-pipeline")) + 1:]
    port_args = server_args[server_args.index("--port"):]
    process = subprocess.Popen([sys.executable, "-m", "hermes_pipeline.testing.fake_provider", "--quiet",
                                *["0" if a == port_args[1] else a for a in port_args]],
                               stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = re.search(r"anthropic base_url: (http://\S+)", process.stdout.readline()).group(1)
        overrides = [re.sub(r"http://127\.0\.0\.1:\d+", url, o) for o in overrides]
        result = run_cli(tmp_path / "run", *overrides, f"summarizer.cache.path={tmp_path / 'c'}",
                         env={"ANTHROPIC_API_KEY": "dry-run"})
    finally:
        process.terminate()
        process.wait(10)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = compacted(tmp_path / "run")
    via = {r["summary_via"] for r in rows}
    assert rows and via <= {"batch", "call"} and "batch" in via
    assert all(r["summarizer"].startswith("anthropic:") for r in rows)
    collected = [json.loads(line) for line in (tmp_path / "run" / "batches.jsonl").read_text().splitlines()
                 if '"collected"' in line]
    assert collected and sum(e["plain_calls"] for e in collected) == sum(r["summary_via"] == "call" for r in rows)


def test_a_ledger_that_is_not_one_stops_the_run_naming_it(tmp_path, sessions):
    ledger = tmp_path / "out" / ".hermes" / "batches.json"
    ledger.parent.mkdir(parents=True)
    ledger.write_text("{not json")
    with FakeProvider() as fake:
        result = cli(tmp_path / "run", "anthropic", fake, sessions, *BATCH, f"output.dir={tmp_path / 'out'}",
                     f"summarizer.cache.path={tmp_path / 'c'}")
        assert fake.batches.created["anthropic"] == 0 and plain_calls(fake, "anthropic") == 0
    assert result.returncode == 3 and f"{ledger}: not a batch ledger" in result.stderr
    assert ledger.read_text() == "{not json"                    # left as it was, for a person to look at
