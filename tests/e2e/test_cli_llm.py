"""The real CLI (subprocess) with summarizer=anthropic/openai, the real SDKs, against FakeProvider.

Each test starts its own FakeProvider on 127.0.0.1 and points the CLI at it
with auxiliary.compression.base_url. The API key is a fake string that is easy
to grep for: it must never reach the run folder, the request cache or the output.
"""
from __future__ import annotations

import json
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_pipeline.summarizers.base import SECTIONS
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.testing.fake_provider import (
    FakeProvider,
    auth_error,
    context_length,
    empty,
    hang,
    insufficient_quota,
    overloaded,
    rate_limit,
    server_error,
    summarize_request,
    truncated,
)
from hermes_pipeline.transcript import SUMMARY_PREFIX, is_summary_message, text_of
from testkit.env import REAL, ROOT, read_jsonl, run_cli
from testkit.sessions import read_conversations
from testkit.synth import write_sessions
from testkit.validity import problems

# Matches none of the secret patterns of analysis/redact.py: only keeping the key
# out of every output (not pattern-based redaction) makes the no-key checks pass.
FAKE_KEY = "hermesFAKEKEY7f3a9c1e5b2d4a60grepme"
PROVIDERS = {
    # provider: (key variable, run model, summary model; conf/model/<model>.yaml has its prices). The default
    # claude-sonnet-4-5 is retired: its summaries go to the anthropic summarizer's default_model.
    "anthropic": ("ANTHROPIC_API_KEY", "claude-sonnet-4-5", "claude-sonnet-4-6"),
    "openai": ("OPENAI_API_KEY", "gpt-4o", "gpt-4o"),
}
FROM_MODEL = "Request digest: sha256:"          # a line only the fake provider's summaries have
SHORT = [{"role": "system", "content": "You are a coding agent."},
         {"role": "user", "content": "What does `ls` do?"},
         {"role": "assistant", "content": "It lists the files in a directory."}]


# ---- inputs (deterministic, written once per worker) ---------------------------------

@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("llm-inputs")
    paths = {"mixed": folder / "mixed.jsonl", "many": folder / "many.jsonl", "one": folder / "one.jsonl"}
    # 12 sessions over the 4,000-token threshold (context 8,000) and 2 that stay unchanged
    write_sessions(paths["mixed"], range(12), n_messages=60, target_tokens=8000)
    with paths["mixed"].open("a") as fh:
        for i in (1, 2):
            fh.write(json.dumps({"id": f"short-{i}", "messages": SHORT}) + "\n")
    write_sessions(paths["many"], range(100, 124), n_messages=40, target_tokens=6000)
    write_sessions(paths["one"], [7], n_messages=60, target_tokens=8000)
    return paths


@pytest.fixture
def fake():
    with FakeProvider() as server:
        yield server


def llm_cli(run_dir: Path, provider: str, fake: FakeProvider, source: Path, *extra: str,
            cache: Path | None = None, key: str | None = FAKE_KEY, timeout: int = 120):
    env_var, model, _ = PROVIDERS[provider]
    url = fake.base_url if provider == "anthropic" else fake.openai_base_url
    cache = cache or run_dir.parent / f"{run_dir.name}-cache" / "cache.sqlite"
    overrides = [f"input={source}", f"summarizer={provider}", f"model={model}", "model.context_length=8000",
                 f"auxiliary.compression.base_url={url}", f"summarizer.cache.path={cache}",
                 "summarizer.retry.initial_backoff=0.01", "summarizer.retry.max_backoff=0.05", *extra]
    return run_cli(run_dir, *overrides, env={env_var: key} if key else {}, timeout=timeout)


def label(provider: str) -> str:
    return f"{provider}:{PROVIDERS[provider][2]}"


def prices(provider: str) -> dict:
    import yaml
    return yaml.safe_load((ROOT / "conf" / "model" / f"{PROVIDERS[provider][2]}.yaml").read_text())["prices"]


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def summary_text(messages: list[dict]) -> str:
    found = [text_of(m.get("content")) for m in messages if is_summary_message(m)]
    assert len(found) == 1, f"{len(found)} summary messages"
    return found[0]


def assert_valid_outputs(source: Path, run_dir: Path, rows: list[dict]) -> dict[str, list[dict]]:
    """Every output transcript is a valid compaction of its input; returns id -> messages."""
    originals = {r["id"]: r["messages"] for r in read_jsonl(source)}
    outputs = {r["id"]: r["messages"] for r in read_jsonl(run_dir / "transcripts" / source.name)}
    assert set(outputs) == set(originals)
    by_id = {r["id"]: r for r in rows}
    for cid, messages in outputs.items():
        assert problems(originals[cid], messages) == [], cid
        if by_id[cid]["status"] == "compacted":
            text = summary_text(messages)
            headings = [line for line in text.splitlines() if line in SECTIONS]   # empty ones left out
            assert headings[:1] == ["## Goal"] and headings == sorted(headings, key=SECTIONS.index), cid
    return outputs


def files_with(folder: Path, needle: str) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(str(path))
    return hits


def assert_no_key(*places: Path | str) -> None:
    for place in places:
        if isinstance(place, Path):
            assert place.exists(), place
            hits = files_with(place, FAKE_KEY) if place.is_dir() else \
                ([str(place)] if FAKE_KEY.encode() in place.read_bytes() else [])
            assert hits == [], f"the key leaked into {hits}"
        else:
            assert FAKE_KEY not in place


def run_log(run_dir: Path) -> str:
    logs = list(run_dir.glob("*.log"))
    assert logs, f"no log in {run_dir}"
    return "\n".join(p.read_text() for p in logs)


# ---- success, usage, cost; then a rerun that pays nothing ----------------------------

@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_success_usage_cost_and_a_free_rerun(inputs, fake, tmp_path, provider):
    source, cache = inputs["mixed"], tmp_path / "cache" / "requests.sqlite"
    result = llm_cli(tmp_path / "run", provider, fake, source, cache=cache)
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    compacted = [r for r in rows if r["status"] == "compacted"]
    assert len(rows) == 14 and len(compacted) == 12
    outputs = assert_valid_outputs(source, tmp_path / "run", rows)
    for row in compacted:
        assert row["summarizer"] == label(provider) and row["fallback"] is None, row
        assert row["calls"] >= 1 and row["cached"] is False
        assert row["usage"]["input_tokens"] > 0 and row["usage"]["output_tokens"] > 0
        assert FROM_MODEL in summary_text(outputs[row["id"]])      # the model's summary is in the output
    for row in rows:
        if row["status"] == "unchanged":
            assert row["calls"] == 0 and row["usage"] == {} and row["summarizer"] is None

    # the request each provider expects (the key was sent; the fake records it redacted)
    assert fake.request_count == sum(r["calls"] for r in rows) == 12
    for request in fake.requests:
        body = request["body"]
        headers = request["headers"]
        assert "<redacted>" in (headers.get("x-api-key"), headers.get("authorization"))
        assert body["model"] == PROVIDERS[provider][2] and body["max_tokens"] >= 2048
        if provider == "anthropic":
            assert request["path"] == "/v1/messages"
            assert body["system"] == [{"type": "text", "text": P.INSTRUCTIONS,
                                       "cache_control": {"type": "ephemeral"}}]
            assert [m["role"] for m in body["messages"]] == ["user"]
        else:
            assert request["path"] == "/v1/chat/completions"
            assert [m["role"] for m in body["messages"]] == ["system", "user"]
            assert body["messages"][0]["content"] == P.INSTRUCTIONS

    # summary.json totals the usage and prices it with the model config
    summary = summary_of(tmp_path / "run")
    usage = summary["summarizer_usage"]
    for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        assert usage[key] == sum(r["usage"].get(key, 0) for r in rows), key
    if provider == "anthropic":   # the instruction block is written to the cache once, then read
        assert usage["cache_write_tokens"] > 0 and usage["cache_read_tokens"] > 0
    price = prices(provider)
    expected = (usage["input_tokens"] * price["input"] + usage["output_tokens"] * price["output"]
                + usage["cache_read_tokens"] * price["cache_read"]
                + usage["cache_write_tokens"] * price["cache_write_5m"]) / 1e6
    assert summary["estimated_cost_usd"]["summarizer"] > 0
    assert summary["estimated_cost_usd"]["summarizer"] == pytest.approx(expected, abs=1e-5)
    assert summary["summarizer_calls"] == 12 and summary["summarizer_retries"] == 0
    assert summary["fallbacks"] == 0 and summary["statuses"]["compacted"] == 12
    assert_no_key(tmp_path / "run", cache.parent, result.stdout, result.stderr)

    # the same input and config again: every summary from the request cache, zero calls
    again = llm_cli(tmp_path / "again", provider, fake, source, cache=cache)
    assert again.returncode == 0, again.stderr
    assert fake.request_count == 12
    rerun_rows = read_jsonl(tmp_path / "again" / "manifest.jsonl")
    assert [r["id"] for r in rerun_rows] == [r["id"] for r in rows]
    for row in rerun_rows:
        if row["status"] == "compacted":
            assert row["cached"] is True and row["calls"] == 0 and row["summarizer"] == label(provider)
    assert summary_of(tmp_path / "again")["summarizer_calls"] == 0
    assert (tmp_path / "again" / "transcripts" / source.name).read_bytes() == \
        (tmp_path / "run" / "transcripts" / source.name).read_bytes()


def test_the_request_cache_is_per_endpoint(inputs, fake, tmp_path):
    """A dry run against the fake must never answer a real run (another base_url) from the cache."""
    cache = tmp_path / "cache" / "requests.sqlite"
    first = llm_cli(tmp_path / "dry", "openai", fake, inputs["one"], cache=cache)
    assert first.returncode == 0, first.stderr
    assert fake.request_count == 1
    with FakeProvider() as other:
        second = llm_cli(tmp_path / "real", "openai", other, inputs["one"], cache=cache)
        assert second.returncode == 0, second.stderr
        assert other.request_count == 1
    [row] = read_jsonl(tmp_path / "real" / "manifest.jsonl")
    assert row["cached"] is False and row["calls"] == 1


# ---- faults in the server's own order ------------------------------------------------

def fault_script(seed: int, provider: str, timeout: float, length: int = 18) -> list:
    """One of each fault, plus a seeded random filler, in a seeded random order."""
    kinds = [rate_limit(retry_after=0.05), server_error(500),
             overloaded(529 if provider == "anthropic" else 503), context_length(),
             hang(timeout + 1.0), truncated(), empty()]
    filler = [None, None, rate_limit(retry_after=0.05), server_error(503), overloaded(), truncated(), empty(),
              context_length()]
    rng = random.Random(seed)
    script = kinds + [rng.choice(filler) for _ in range(length - len(kinds))]
    rng.shuffle(script)
    return script


@pytest.mark.parametrize("provider,seed", [("anthropic", 3), ("openai", 11)])
def test_faults_in_an_independent_order_lose_no_summary(inputs, fake, tmp_path, provider, seed):
    timeout = 2.0       # a busy machine may time out a request the server has not read yet: it is recorded later
    script = fault_script(seed, provider, timeout)
    fake.script(script)
    source, cache = inputs["mixed"], tmp_path / "cache" / "requests.sqlite"
    # each fault is handled per conversation here: no circuit breaker, no health verdict
    result = llm_cli(tmp_path / "run", provider, fake, source, "summarizer.retry.attempts=2",
                     f"summarizer.retry.timeout={timeout}", "summarizer.breaker.max_failures=1000",
                     "summarizer.max_fallback_share=1.0", cache=cache)
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert len(rows) == 14 and sum(r["status"] == "compacted" for r in rows) == 12
    outputs = assert_valid_outputs(source, tmp_path / "run", rows)

    split, fell_back = [], []
    for row in rows:
        if row["status"] != "compacted":
            assert row["calls"] == 0
            continue
        text = summary_text(outputs[row["id"]])
        assert row["calls"] >= 1 + row["retries"]          # every retry is one more request
        if row["fallback"] is None:
            assert row["summarizer"] == label(provider) and FROM_MODEL in text
        elif row["fallback"].startswith("split-merged:"):
            assert row["summarizer"] == label(provider), row
            assert "parts, merged by" in row["fallback"]
            split.append(row)
        else:
            assert row["summarizer"] == "extractive", row
            assert row["fallback"].startswith(label(provider)) and "embedded extractive summary" in row["fallback"]
            assert FROM_MODEL not in text
            fell_back.append(row)

    # a request the client timed out on before the server read it is recorded late: wait for the record
    fake.wait_for_requests(sum(r["calls"] for r in rows))
    served = [r["fault"] for r in fake.requests]       # the server applied its script in arrival order
    consumed = len(script) - len(fake.pending_faults)
    assert served[:consumed] == [f.kind if f else None for f in script][:consumed] and consumed >= 12
    if "context_length" in served:    # a too-long reply leads to split-and-merge or a "too long" fallback
        assert any("split-merged" in r["fallback"] or "too long" in r["fallback"] for r in split + fell_back)

    # every attempt is counted: in the rows, in summary.json and in the log
    summary = summary_of(tmp_path / "run")
    assert fake.request_count == sum(r["calls"] for r in rows) == summary["summarizer_calls"]
    assert summary["summarizer_retries"] == sum(r["retries"] for r in rows) >= 1
    assert summary["fallbacks"] == len(fell_back) and summary["split_merged"] == len(split)
    log_text = run_log(tmp_path / "run")
    assert len(re.findall(r"attempt \d+/2 failed .*retrying in", log_text)) == summary["summarizer_retries"]
    if "hang" in served:              # a reply later than the timeout is a failed attempt
        assert "TimeoutError" in log_text
    # no key anywhere: the run folder (.hydra/, the log, manifest, transcripts), the cache, the output
    assert (tmp_path / "run" / ".hydra" / "config.yaml").exists()
    assert_no_key(tmp_path / "run", cache.parent, result.stdout, result.stderr)


def test_retries_exhausted_fall_back_and_are_reported(inputs, fake, tmp_path):
    fake.script([server_error(500), overloaded(), rate_limit(retry_after=0.01)])
    result = llm_cli(tmp_path / "run", "anthropic", fake, inputs["one"], "summarizer.retry.attempts=3")
    assert result.returncode == 4, result.stderr        # every compacted conversation fell back: unhealthy
    assert "summarizer unhealthy: 1 of 1 compacted conversations fell back" in result.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["status"] == "compacted" and row["summarizer"] == "extractive"
    assert "gave up after 3 attempts" in row["fallback"] and "429" in row["fallback"]
    assert row["calls"] == 3 and row["retries"] == 2 and fake.request_count == 3
    assert_valid_outputs(inputs["one"], tmp_path / "run", [row])
    summary = summary_of(tmp_path / "run")
    assert summary["fallbacks"] == 1 and summary["summarizer_retries"] == 2


# ---- too long for the model: split and merge, or fall back -----------------------------

def prompt_chars(body: dict) -> int:
    """Characters of instructions + messages, as the fake measures them against max_input_chars."""
    system = sum(len(block["text"]) for block in body.get("system") or [])
    return system + sum(len(m["content"]) for m in body["messages"])


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_context_length_errors_split_and_merge(inputs, fake, tmp_path, provider):
    fake.max_input_chars = 18000      # the whole request is ~24K characters, each half ~14K
    result = llm_cli(tmp_path / "run", provider, fake, inputs["one"], "summarizer.input=full")
    assert result.returncode == 0, result.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["status"] == "compacted" and row["summarizer"] == label(provider)
    assert row["fallback"].startswith("split-merged:")
    assert "summarized in 2 parts, merged by a merge call" in row["fallback"]
    sizes = [prompt_chars(r["body"]) for r in fake.requests]
    assert sizes[0] > fake.max_input_chars and all(size <= fake.max_input_chars for size in sizes[1:])
    assert row["calls"] == fake.request_count == 4          # too long, two parts, the merge
    text = summary_text(assert_valid_outputs(inputs["one"], tmp_path / "run", [row])[row["id"]])
    assert FROM_MODEL in text
    summary = summary_of(tmp_path / "run")
    assert summary["split_merged"] == 1 and summary["fallbacks"] == 0


def test_too_long_even_in_parts_falls_back(inputs, fake, tmp_path):
    fake.max_input_chars = len(P.INSTRUCTIONS) + 100
    result = llm_cli(tmp_path / "run", "openai", fake, inputs["one"], "summarizer.split.max_parts=2",
                     "summarizer.max_fallback_share=1.0")     # one fallback of one is fine here
    assert result.returncode == 0, result.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["summarizer"] == "extractive" and "input too long" in row["fallback"]
    assert row["calls"] == fake.request_count == 3    # whole, two halves; then the embedded summary
    assert_valid_outputs(inputs["one"], tmp_path / "run", [row])
    assert summary_of(tmp_path / "run")["fallbacks"] == 1


# ---- credentials ---------------------------------------------------------------------

@pytest.mark.parametrize("provider,fault", [("anthropic", auth_error), ("openai", auth_error),
                                            ("openai", insufficient_quota)])
def test_auth_or_quota_error_stops_the_run(inputs, fake, tmp_path, provider, fault):
    fake.script([fault()])
    result = llm_cli(tmp_path / "run", provider, fake, inputs["many"])
    assert result.returncode == 3, result.stderr
    env_var = PROVIDERS[provider][0]
    assert "run stopped early" in result.stderr and env_var in result.stderr
    assert fake.requests[0]["fault"] == fault().kind
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert len(rows) < 24 and fake.request_count < 24          # no grinding through on fallbacks
    assert all(r["fallback"] is None for r in rows)
    assert summary_of(tmp_path / "run")["stopped"]
    assert_no_key(tmp_path / "run", result.stdout, result.stderr)


def test_a_stopped_run_keeps_what_it_finished(inputs, fake, tmp_path):
    fake.script([None, None, auth_error()])
    result = llm_cli(tmp_path / "run", "anthropic", fake, inputs["many"], "runner.concurrency=1")
    assert result.returncode == 3
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    listed = sorted(r["id"] for r in rows if r["status"] in ("compacted", "unchanged"))
    written = sorted(c["id"] for f in (tmp_path / "run" / "transcripts").rglob("*.jsonl") for c in read_jsonl(f))
    assert len(listed) >= 2 and written == listed   # the manifest and transcripts/ agree


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_missing_key_fails_before_any_work(inputs, fake, tmp_path, provider):
    result = llm_cli(tmp_path / "run", provider, fake, inputs["one"], key=None)
    assert result.returncode == 1
    assert PROVIDERS[provider][0] in result.stderr
    assert fake.request_count == 0 and not (tmp_path / "run" / "manifest.jsonl").exists()


# ---- throughput --------------------------------------------------------------------

def test_concurrent_summaries_through_the_cli(inputs, fake, tmp_path):
    latency, n = 0.3, 24
    fake.default_latency = latency
    # (with a 1-hour cache TTL: the cache writes are priced at the 1h rate)
    result = llm_cli(tmp_path / "run", "anthropic", fake, inputs["many"], "prompt_caching.cache_ttl=1h")
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert len(rows) == n and all(r["calls"] == 1 and r["fallback"] is None for r in rows)
    arrivals = sorted(r["time"] for r in fake.requests)
    assert len(arrivals) == n
    # serial would take n x latency between the first request and the last reply
    span = arrivals[-1] - arrivals[0] + latency
    assert span < 0.5 * n * latency, span
    peak = max(sum(1 for t in arrivals if s <= t < s + latency) for s in arrivals)
    assert peak >= 4, peak
    summary = summary_of(tmp_path / "run")     # (wall time is a benchmark figure: make bench)
    assert all(r["body"]["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for r in fake.requests)
    usage, price = summary["summarizer_usage"], prices("anthropic")
    assert usage["cache_write_tokens"] > 0
    expected = (usage["input_tokens"] * price["input"] + usage["output_tokens"] * price["output"]
                + usage["cache_read_tokens"] * price["cache_read"]
                + usage["cache_write_tokens"] * price["cache_write_1h"]) / 1e6
    assert summary["estimated_cost_usd"]["summarizer"] == pytest.approx(expected, abs=1e-5)
    print(f"request span {span:.2f}s, peak in flight {peak}")


# ---- the documented dry run -----------------------------------------------------------

def documented_dry_run() -> tuple[list[str], list[str]]:
    """The fake-provider command and the hermes-pipeline overrides shown in docs/summaries.md."""
    text = (ROOT / "docs" / "summaries.md").read_text().replace("\\\n", " ")
    server = next(line for line in text.splitlines() if "-m hermes_pipeline.testing.fake_provider --port" in line)
    run = next(line for line in text.splitlines()
               if "hermes-pipeline" in line and "summarizer=anthropic" in line and "127.0.0.1" in line)
    server_args = shlex.split(server.split("&")[0])
    words = shlex.split(run.split("#")[0])
    start = next(i for i, w in enumerate(words) if w.endswith("hermes-pipeline"))
    return server_args[server_args.index("--port"):], words[start + 1:]


def test_the_documented_dry_run_against_the_fake_provider_cli(tmp_path):
    port_args, overrides = documented_dry_run()
    documented_url = next(o.split("=", 1)[1] for o in overrides if o.startswith("auxiliary.compression.base_url="))
    server = subprocess.Popen([sys.executable, "-m", "hermes_pipeline.testing.fake_provider", "--port", "0", "--quiet"],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = re.search(r"anthropic base_url: (http://\S+)", server.stdout.readline()).group(1)
        assert port_args[1] in documented_url
        overrides = [o.replace(documented_url, url) for o in overrides]
        result = run_cli(tmp_path / "run", *overrides, f"summarizer.cache.path={tmp_path / 'cache.sqlite'}",
                         env={"ANTHROPIC_API_KEY": FAKE_KEY})
    finally:
        server.terminate()
        server.wait(10)
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    compacted = [r for r in rows if r["status"] == "compacted"]
    assert compacted and all(r["summarizer"] == label("anthropic") for r in compacted)
    assert all(r["fallback"] is None and r["calls"] == 1 for r in compacted)


# ---- the artifact-trail guard on model summaries -------------------------------------

@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_model_summary_that_misses_files_and_errors_gets_an_artifact_trail(fake, tmp_path, provider):
    """A real C-library session: the fake model names at most 20 paths and no error line, so the
    guard must add what the removed middle changed and hit, and the score counts it."""
    session = REAL / "vsla-claude-sessions" / "6dc88126-2048-43a9-b5c2-b9747d5a0301.jsonl"
    result = llm_cli(tmp_path / "run", provider, fake, session, "model.context_length=16000")
    assert result.returncode == 0, result.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["status"] == "compacted" and row["fallback"] is None and row["summarizer"].startswith(provider)
    [out] = read_conversations(tmp_path / "run" / "transcripts" / session.name, False)   # a Claude Code session again
    summary = [text_of(m["content"]) for m in out.messages if SUMMARY_PREFIX in text_of(m["content"])][-1]
    body = fake.requests[-1]["body"]
    model_text = summarize_request(body, provider)          # what the model itself wrote
    trail = summary[summary.index("## Artifact Trail"):]
    assert row["stats"]["artifact_trail_items_added"] >= 1
    assert any(line.startswith("- Error") for line in trail.splitlines()) or "Edited" in trail or "Created" in trail
    assert "## Artifact Trail" not in model_text
    quality = row["quality"]
    assert quality["files_written"]["kept"] == quality["files_written"]["total"]     # the guard named them all
    assert quality["errors"]["kept"] == quality["errors"]["total"]


def test_an_incremental_run_tries_fallbacks_again_and_keeps_good_summaries(inputs, fake, tmp_path):
    out = tmp_path / "tree"
    fake.script([server_error(500)] * 3)          # the first conversation's attempts fail, the rest succeed
    first = llm_cli(tmp_path / "run1", "anthropic", fake, inputs["mixed"], f"output.dir={out}", "incremental=true",
                    "summarizer.retry.attempts=3", "summarizer.max_fallback_share=1.0", "summarizer.breaker.max_failures=100",
                    "runner.concurrency=1")
    assert first.returncode == 0, first.stderr
    fell_back = [r["source"] for r in read_jsonl(tmp_path / "run1" / "manifest.jsonl") if r["fallback"]]
    assert len(fell_back) == 1
    again = llm_cli(tmp_path / "run2", "anthropic", fake, inputs["mixed"], f"output.dir={out}", "incremental=true")
    assert again.returncode == 0, again.stderr
    rows = read_jsonl(tmp_path / "run2" / "manifest.jsonl")
    assert [r["source"] for r in rows] == fell_back and rows[0]["fallback"] is None   # only it, and now from the model
    summary = summary_of(tmp_path / "run2")
    assert summary["skipped_unchanged"] == 13
    usage, price = summary["summarizer_usage"], prices("anthropic")   # billed at the summary model's own prices
    expected = (usage["input_tokens"] * price["input"] + usage["output_tokens"] * price["output"]
                + usage["cache_read_tokens"] * price["cache_read"]
                + usage["cache_write_tokens"] * price["cache_write_5m"]) / 1e6
    assert summary["estimated_cost_usd"]["summarizer"] == pytest.approx(expected, abs=1e-5)


def test_a_model_summary_that_fills_its_budget_still_gets_an_artifact_trail(fake, tmp_path):
    """At 12K with compression.summary_ceiling=600 the summary budget is 600 tokens (5% of the context; the floor
    would give it 1,200) and the fake model writes about all of them: the guard
    still names what it missed, within TRAIL_ROOM of the budget beyond the model's text."""
    from hermes_pipeline.stages.summarize import TRAIL_ROOM
    from hermes_pipeline.tokens import TokenCounter
    from testkit.env import LONG_SESSIONS, shared
    session = shared(LONG_SESSIONS / "vsla-claude-sessions" / "9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl")
    # every tool output sent whole: the fake model's summary, built from what it reads, fills the budget
    result = llm_cli(tmp_path / "run", "anthropic", fake, session, "model.context_length=12000",
                     "compression.summary_ceiling=600", "summarizer.input=full")
    assert result.returncode == 0, result.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    counter, budget = TokenCounter(), 600      # the ceiling: max(min(12000 x 0.05, 600), min(2000, 1200, 600))
    model_text = summarize_request(fake.requests[-1]["body"], "anthropic")
    assert counter.count_text(model_text) >= 0.9 * budget                  # the model left little room
    assert row["stats"]["artifact_trail_items_added"] >= 2
    assert budget < row["summary_tokens"] <= counter.count_text(model_text) + TRAIL_ROOM * budget + 60
