"""Anthropic and OpenAI summarizers: the real SDKs against the fake provider on 127.0.0.1."""
from __future__ import annotations

import json
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta

import httpx2
import pytest

from hermes_pipeline.components import build
from hermes_pipeline.config import ConfigError
from hermes_pipeline.summarizers.base import SECTIONS, SummarizerFatalError, SummaryRequest
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.summarizers.llm.anthropic import AnthropicSummarizer
from hermes_pipeline.summarizers.llm.openai import OpenAISummarizer
from hermes_pipeline.testing.fake_provider import (
    FakeProvider,
    auth_error,
    context_length,
    empty,
    forbidden,
    hang,
    insufficient_quota,
    overloaded,
    rate_limit,
    server_error,
    truncated,
)

ANTHROPIC_KEY = "sk-ant-" + "api03-TESTKEY-0123456789abcdefABCDEF"   # fake; built so no key-shaped literal is tracked
OPENAI_KEY = "sk-proj-TESTKEY-0123456789abcdefABCDEF"
KEYS = (ANTHROPIC_KEY, OPENAI_KEY, "TESTKEY")
PROVIDERS = ["anthropic", "openai"]
FAST_RETRY = {"attempts": 3, "initial_backoff": 0.01, "max_backoff": 0.05, "timeout": 5}


@pytest.fixture(scope="module")
def server():
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def fake(server):
    server.reset()
    server.default_latency = 0.0
    server.max_input_chars = None
    yield server
    server.reset()


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)


@pytest.fixture
def make(fake, tmp_path):
    made = []

    def build(provider="anthropic", retry=None, cache=False, base_url=None, **kwargs):
        cls = AnthropicSummarizer if provider == "anthropic" else OpenAISummarizer
        url = base_url or (fake.anthropic_base_url if provider == "anthropic" else fake.openai_base_url)
        summarizer = cls(
            name=provider, retry={**FAST_RETRY, **(retry or {})},
            cache={"enabled": bool(cache), "path": str(cache if isinstance(cache, str) else tmp_path / "c.sqlite")},
            model_cfg={"name": "claude-sonnet-4-5", "provider": provider, "context_length": 200000},
            aux_cfg={"model": f"{provider}-summary-model", "provider": "auto", "base_url": url},
            **kwargs)
        made.append(summarizer)
        return summarizer

    yield build
    for summarizer in made:
        summarizer.close()


def conversation(n=6, size=400, tag="C"):
    messages = []
    for i in range(n):
        messages.append({"role": "user", "content": f"{tag}-U{i}: please update src/mod{i}.py " + "u" * size})
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/mod{i}.py"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{tag}-T{i} " + "t" * size})
        messages.append({"role": "assistant", "content": f"{tag}-A{i}: done with mod{i}"})
    return messages


def request(tag="C", n=6, size=400, **kwargs):
    return SummaryRequest(conversation_id=tag, middle=conversation(n, size, tag), budget_tokens=2000,
                          context_length=200000, **kwargs)


def has_all_sections(text):
    """A structured summary: it opens with Goal and its headings are the template's, in order (the embedded
    summarizer leaves out a section with nothing in it)."""
    headings = [line for line in text.splitlines() if line.startswith("#")]
    return bool(headings) and headings[0] == "## Goal" and all(h in SECTIONS for h in headings) \
        and headings == sorted(headings, key=SECTIONS.index)


def assert_no_key(*things):
    for thing in things:
        text = thing if isinstance(thing, str) else repr(thing)
        for key in KEYS:
            assert key not in text


# ---- success and request shape -------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_success(make, fake, provider):
    summarizer = make(provider)
    summarizer.check()
    result = summarizer.summarize(request())
    assert has_all_sections(result.text)
    assert result.summarizer == f"{provider}:{provider}-summary-model"
    assert result.fallback is None and not result.cached
    assert (result.calls, result.retries) == (1, 0)
    assert set(result.usage) == {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    assert result.usage["input_tokens"] > 0 and result.usage["output_tokens"] > 0
    assert fake.request_count == 1


def test_anthropic_request_shape(make, fake):
    make("anthropic").summarize(request())
    sent = fake.requests[-1]
    body = sent["body"]
    assert sent["path"] == "/v1/messages"
    assert body["model"] == "anthropic-summary-model"
    assert body["max_tokens"] >= 2000 * 1.5
    assert body["system"] == [{"type": "text", "text": P.INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}]
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "[USER]: C-U0: please update src/mod0.py" in body["messages"][0]["content"]
    assert "about 2000 tokens" in body["messages"][0]["content"]
    auth = sent["headers"].get("x-api-key") or sent["headers"].get("authorization")
    assert auth == "<redacted>" and "anthropic-version" in sent["headers"]   # the key went as a header


def test_anthropic_cache_marker_ttl_and_cached_instruction_reads(make, fake):
    summarizer = make("anthropic", cache_ttl="1h")
    first = summarizer.summarize(request("A"))
    second = summarizer.summarize(request("B"))
    assert fake.requests[-1]["body"]["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert first.usage["cache_write_tokens"] > 0 and first.usage["cache_read_tokens"] == 0
    assert second.usage["cache_read_tokens"] == first.usage["cache_write_tokens"]


def test_openai_request_shape(make, fake):
    make("openai").summarize(request())
    sent = fake.requests[-1]
    body = sent["body"]
    assert sent["path"] == "/v1/chat/completions"
    assert body["model"] == "openai-summary-model"
    assert body["max_tokens"] >= 2000 * 1.5
    assert body["messages"][0] == {"role": "system", "content": P.INSTRUCTIONS}
    assert body["messages"][1]["role"] == "user" and len(body["messages"]) == 2
    assert "[TOOL RESULT c0]: C-T0" in body["messages"][1]["content"]


def test_openai_max_completion_tokens_option(make, fake):
    make("openai", max_tokens_param="max_completion_tokens").summarize(request())
    body = fake.requests[-1]["body"]
    assert "max_tokens" not in body and body["max_completion_tokens"] >= 3000


def test_a_retired_run_model_sends_its_summaries_to_the_default_model(caplog, composed_config, tmp_path,
                                                                       monkeypatch):
    """A model the provider has retired gets no summary calls from its retirement day on: the summarizer's
    default_model does, and the run says so; auxiliary.compression.model still wins; a bad day is a config
    error. The bundled default (claude-sonnet-4-5, retired 2026-11-30) is one."""
    def summary_model(retired, aux=None):
        return AnthropicSummarizer(model_cfg={"name": "claude-sonnet-4-5", "retired": retired},
                                   aux_cfg={"model": aux}, cache={"enabled": False},
                                   default_model="claude-sonnet-4-6", api_key_env="NO_SUCH_KEY_VAR").model
    today = date.today()
    with caplog.at_level("WARNING"):
        assert summary_model(today.isoformat()) == "claude-sonnet-4-6"
    assert "claude-sonnet-4-5 was retired on" in caplog.text and "summaries go to claude-sonnet-4-6" in caplog.text
    assert summary_model((today + timedelta(days=1)).isoformat()) == "claude-sonnet-4-5"    # not yet
    assert summary_model(None) == "claude-sonnet-4-5"
    assert summary_model(today.isoformat(), aux="claude-opus-4-7") == "claude-opus-4-7"
    with pytest.raises(ConfigError, match="model.retired must be a day"):
        summary_model("end of November")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "built-never-called")
    built = build(composed_config("summarizer=anthropic"), tmp_path / "run")
    try:
        assert built.summarizer.model == "claude-sonnet-4-6" and built.engine.services.model_name == "claude-sonnet-4-5"
    finally:
        built.close()


def test_model_defaults_to_the_runs_model_of_the_same_provider():
    summarizer = OpenAISummarizer(model_cfg={"name": "gpt-4o"}, aux_cfg={"model": None}, cache={"enabled": False},
                                  default_model="gpt-4.1-mini")
    assert summarizer.model == "gpt-4o" and summarizer.calls.key_env == "OPENAI_API_KEY"
    claude_run = OpenAISummarizer(model_cfg={"name": "claude-sonnet-4-5"}, cache={"enabled": False},
                                  default_model="gpt-4.1-mini")
    assert claude_run.model == "gpt-4.1-mini"          # never a Claude model to the OpenAI endpoint
    compatible = OpenAISummarizer(model_cfg={"name": "claude-sonnet-4-5"}, cache={"enabled": False},
                                  aux_cfg={"base_url": "http://127.0.0.1:9/v1"}, default_model="gpt-4.1-mini")
    assert compatible.model == "gpt-4.1-mini"          # nor to a compatible server, unless named there
    anthropic = AnthropicSummarizer(model_cfg={"name": "gpt-4o"}, cache={"enabled": False},
                                    default_model="claude-sonnet-4-5")
    assert anthropic.model == "claude-sonnet-4-5"
    with pytest.raises(TypeError):                      # a typo in an option is refused, not ignored
        OpenAISummarizer(model_cfg={"name": "gpt-4o"}, cache={"enabled": False}, unknown_option="x")
    router = OpenAISummarizer(model_cfg={"name": "x"}, aux_cfg={"provider": "openrouter"}, cache={"enabled": False})
    assert router.calls.base_url == "https://openrouter.ai/api/v1" and router.calls.key_env == "OPENROUTER_API_KEY"


def test_input_is_redacted_and_thinking_stripped(make, fake):
    middle = conversation(2)
    middle[1]["content"] = "<think>secret reasoning</think>Using key sk-ant-" + "api03-zzzzzzzzzzzzzzzzzzzzzzzz now"
    middle[2]["content"] = "DATABASE_URL=postgres://app:s3cr3tpass@db/x"
    make("anthropic").summarize(SummaryRequest("r", middle, 2000, 200000))
    sent = json.dumps(fake.requests[-1]["body"])
    for leaked in ("secret reasoning", "sk-ant-api03-zzzz", "s3cr3tpass"):
        assert leaked not in sent


def test_iterative_update_sends_previous_summary(make, fake):
    previous = "## Goal\n- ship v2\n### In Progress\n- migrate db"
    make("openai").summarize(request(previous_summary=previous))
    content = fake.requests[-1]["body"]["messages"][1]["content"]
    assert "<previous-summary>\n## Goal\n- ship v2" in content and "Update the existing summary" in content


# ---- faults that are retried and then succeed --------------------------------

RETRIED = {
    "429": lambda: rate_limit(0.01),
    "500": lambda: server_error(500),
    "502": lambda: server_error(502),
    "503": lambda: server_error(503),
    "504": lambda: server_error(504),
    "529": lambda: overloaded(),
    "truncated": truncated,
    "empty": empty,
}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", sorted(RETRIED))
def test_transient_fault_is_retried_and_succeeds(make, fake, caplog, provider, fault):
    caplog.set_level(logging.WARNING, logger="hermes_pipeline.summarizers.llm.calls")
    fake.script([RETRIED[fault]()])
    result = make(provider).summarize(request())
    assert result.fallback is None and has_all_sections(result.text)
    assert (result.calls, result.retries) == (2, 1)
    assert fake.request_count == 2
    assert "attempt 1/3 failed" in caplog.text and "retrying in" in caplog.text


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cut_reply_is_retried_with_more_room(make, fake, provider):
    fake.script([truncated()])
    make(provider).summarize(request())
    first, second = (r["body"]["max_tokens"] for r in fake.requests)
    assert second == 2 * first


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hang_past_the_timeout_is_retried(make, fake, provider):
    fake.script([hang(30)])
    result = make(provider, retry={"timeout": 3.0}).summarize(request())   # room for a busy machine
    # the second attempt answered (the first still hangs on the server): the timeout cut the wait short
    assert result.fallback is None and result.retries == 1 and fake.request_count == 2


def test_retry_after_is_honoured(make, fake):
    fake.script([rate_limit(0.6)])
    started = time.monotonic()
    result = make("anthropic", retry={"initial_backoff": 0.01}).summarize(request())
    assert result.retries == 1 and time.monotonic() - started >= 0.55


# ---- faults that end in the extractive fallback ------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_exhausted_retries_fall_back_with_the_reason(make, fake, provider):
    fake.script([server_error(503)] * 3)
    result = make(provider).summarize(request())
    assert result.summarizer == "extractive" and has_all_sections(result.text)
    assert result.fallback.startswith(f"{provider}:{provider}-summary-model: gave up after 3 attempts")
    assert "503" in result.fallback and "extractive" in result.fallback
    assert (result.calls, result.retries) == (3, 2)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dropped_connections_are_retried_then_fall_back(make, provider):
    with socket.socket() as sock:   # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    result = make(provider, base_url=url).summarize(request())
    assert "gave up after 3 attempts (APIConnectionError" in result.fallback
    assert (result.calls, result.retries) == (3, 2)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_not_found_is_not_retried(make, fake, provider):
    base = fake.anthropic_base_url if provider == "anthropic" else fake.openai_base_url
    result = make(provider, base_url=base + "/nowhere").summarize(request())
    assert "request failed (NotFoundError 404" in result.fallback
    assert (result.calls, result.retries) == (1, 0) and fake.request_count == 1


@pytest.mark.parametrize("status,kind", [
    (400, "fail"), (401, "fatal"), (402, "fatal"), (403, "fatal"), (404, "fail"), (408, "retry"),
    (422, "fail"), (429, "retry"), (500, "retry"), (501, "retry"), (502, "retry"), (503, "retry"),
    (504, "retry"), (529, "retry"), (413, "too_long")])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_status_classification(provider, status, kind):
    import anthropic
    import openai
    sdk = anthropic if provider == "anthropic" else openai
    cls = AnthropicSummarizer if provider == "anthropic" else OpenAISummarizer
    summarizer = cls(model_cfg={"name": "m"}, cache={"enabled": False})
    response = httpx2.Response(status, request=httpx2.Request("POST", "http://127.0.0.1/x"))
    error = sdk.APIStatusError("boom", response=response, body={"error": {"type": "x", "message": "boom"}})
    assert summarizer.calls._classify(error) == kind
    quota = sdk.APIStatusError("q", response=httpx2.Response(429, request=response.request),
                               body={"error": {"code": "insufficient_quota", "message": "quota"}})
    assert summarizer.calls._classify(quota) == "fatal"


# ---- context length: split, summarize the parts, merge -------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_too_long_input_is_split_and_merged(make, fake, provider):
    req = request("S", n=8, size=600)
    full = len(P.INSTRUCTIONS) + len(P.build_user_prompt(req.middle, 2000, None, req.head))
    fake.max_input_chars = len(P.INSTRUCTIONS) + int(0.7 * (full - len(P.INSTRUCTIONS)))
    result = make(provider).summarize(req)
    assert result.summarizer == f"{provider}:{provider}-summary-model"
    assert result.fallback.startswith("split-merged:") and "2 parts, merged by a merge call" in result.fallback
    assert has_all_sections(result.text)
    assert result.calls == 4 and fake.request_count == 4   # too long, 2 parts, merge
    # nothing of the middle was dropped: every message reached the model in some part
    answered = " ".join(json.dumps(r["body"]) for r in fake.requests[1:3])
    for i in range(8):
        assert f"S-U{i}:" in answered and f"S-T{i} " in answered and f"S-A{i}:" in answered


def test_failed_merge_call_merges_section_wise(make, fake):
    fake.script([context_length(), None, None, server_error(500)])
    result = make("anthropic", retry={"attempts": 1}).summarize(request())
    assert "2 parts, merged by section-wise" in result.fallback
    assert has_all_sections(result.text) and result.summarizer.startswith("anthropic:")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_too_long_even_in_parts_falls_back(make, fake, provider):
    fake.max_input_chars = len(P.INSTRUCTIONS) + 50
    result = make(provider, split={"max_parts": 4}).summarize(request())
    assert result.summarizer == "extractive" and has_all_sections(result.text)
    assert "input too long" in result.fallback and "splitting failed" in result.fallback
    assert result.calls == 1 + 2 + 4   # whole, halves, quarters; then give up


# ---- auth and quota stop the run --------------------------------------------

FATAL = {"401": auth_error, "403": forbidden, "quota": insufficient_quota}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", sorted(FATAL))
def test_auth_and_quota_errors_stop_the_run(make, fake, caplog, provider, fault):
    caplog.set_level(logging.DEBUG)
    fake.script([FATAL[fault]()])
    summarizer = make(provider)
    with pytest.raises(SummarizerFatalError) as raised:
        summarizer.summarize(request())
    assert fake.request_count == 1   # not retried
    assert summarizer.calls.key_env in str(raised.value)
    with pytest.raises(SummarizerFatalError):   # later conversations don't call the model again
        summarizer.summarize(request("other"))
    assert fake.request_count == 1
    assert_no_key(str(raised.value), caplog.text)


def test_auth_errors_can_fall_back_instead(make, fake):
    fake.script([auth_error()])
    result = make("openai", stop_on_auth_error=False).summarize(request())
    assert result.summarizer == "extractive" and "refused the credentials" in result.fallback
    assert result.calls == 1


# ---- the key --------------------------------------------------------------------

def test_missing_key_fails_at_check(make, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    summarizer = make("anthropic")
    with pytest.raises(SummarizerFatalError, match="ANTHROPIC_API_KEY is not set"):
        summarizer.check()
    with pytest.raises(SummarizerFatalError):
        summarizer.summarize(request())


def test_key_from_a_named_variable(make, fake, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("MY_VLLM_KEY", "TESTKEY-vllm-0123456789")
    summarizer = make("openai", api_key_env="MY_VLLM_KEY")
    summarizer.check()
    assert summarizer.summarize(request()).fallback is None
    with pytest.raises(SummarizerFatalError, match="UNSET_VARIABLE_X"):
        make("openai", api_key_env="UNSET_VARIABLE_X").check()
    monkeypatch.delenv("MY_VLLM_KEY")
    keyless = make("openai", api_key_env="MY_VLLM_KEY", require_api_key=False)
    keyless.check()
    assert keyless.summarize(request()).fallback is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_key_never_logged_returned_or_cached(make, fake, caplog, tmp_path, provider):
    caplog.set_level(logging.DEBUG)   # SDK and HTTP debug logs included
    cache = str(tmp_path / "keycheck.sqlite")
    summarizer = make(provider, cache=cache, breaker={"max_failures": 10})   # the auth error must be reached
    fake.script([rate_limit(0.01), None, server_error(500), server_error(500), server_error(500)])
    results = [summarizer.summarize(request("k1")), summarizer.summarize(request("k2")),
               summarizer.summarize(request("k1"))]
    assert results[1].fallback and results[2].cached
    fake.script([auth_error()])
    with pytest.raises(SummarizerFatalError) as raised:
        summarizer.summarize(request("k3"))
    summarizer.close()
    assert_no_key(caplog.text, str(raised.value), *results, vars(summarizer))
    with open(cache, "rb") as handle:
        assert_no_key(handle.read().decode("latin-1"))


# ---- request cache ------------------------------------------------------------

@pytest.mark.parametrize("provider", PROVIDERS)
def test_rerun_makes_zero_calls(make, fake, tmp_path, provider):
    cache = str(tmp_path / "rerun.sqlite")
    first = make(provider, cache=cache).summarize(request())
    assert fake.request_count == 1
    rerun = make(provider, cache=cache).summarize(request())   # a new run, same cache file
    assert fake.request_count == 1
    assert rerun.cached and rerun.text == first.text
    assert (rerun.calls, rerun.retries) == (0, 0) and sum(rerun.usage.values()) == 0


def test_rerun_of_a_split_summary_makes_zero_calls(make, fake, tmp_path):
    cache = str(tmp_path / "split.sqlite")
    fake.script([context_length()])
    first = make("anthropic", cache=cache).summarize(request())
    calls = fake.request_count
    rerun = make("anthropic", cache=cache).summarize(request())
    assert fake.request_count == calls and rerun.cached
    assert rerun.text == first.text and rerun.fallback == first.fallback


def test_fallbacks_are_not_cached_and_disabled_cache_calls_again(make, fake, tmp_path):
    cache = str(tmp_path / "fb.sqlite")
    fake.script([server_error(500)] * 3)
    assert make("openai", cache=cache).summarize(request()).fallback
    assert make("openai", cache=cache).summarize(request()).fallback is None   # the model, not the cache
    uncached = make("openai", cache=False)
    before = fake.request_count
    uncached.summarize(request())
    uncached.summarize(request())
    assert fake.request_count == before + 2


# ---- concurrency ----------------------------------------------------------------

def _concurrently(summarizer, n, threads):
    requests = [request(f"conc{i}", n=2, size=50) for i in range(n)]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(summarizer.summarize, requests))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_concurrent_calls_overlap(make, fake, provider):
    summarizer = make(provider, max_in_flight=16)
    summarizer.summarize(request("warm-up", n=1))   # SDK import and connection set-up
    fake.hold_replies_until(16)        # no reply before 16 requests are in the server at once
    results = _concurrently(summarizer, 32, 16)
    assert all(r.fallback is None for r in results) and fake.peak_in_flight == 16


def test_max_in_flight_bounds_concurrency(make, fake):
    summarizer = make("anthropic", max_in_flight=2)
    summarizer.summarize(request("warm-up", n=1))
    fake.default_latency = 0.2         # 8 threads would all be in the server at once if nothing held them back
    fake.hold_replies_until(2)
    assert all(r.fallback is None for r in _concurrently(summarizer, 8, 8))
    assert fake.peak_in_flight == 2


def test_close_is_idempotent_and_summarizer_restarts(make, fake):
    summarizer = make("openai")
    summarizer.summarize(request("a"))
    summarizer.close()
    summarizer.close()
    assert summarizer.summarize(request("b")).fallback is None



@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_circuit_opens_after_calls_failed_in_a_row_and_the_endpoint_is_left_alone(make, fake, provider):
    summarizer = make(provider, cache=True, breaker={"max_failures": 3})
    fake.script([None])                                   # one good answer first: it is cached
    assert summarizer.summarize(request("ok")).fallback is None
    fake.script([server_error(500)] * 9 + [None] * 20)    # three calls of three 500s each, then a healthy server
    failed = [summarizer.summarize(request(x)) for x in "abc"]
    assert all("gave up after 3 attempts" in r.fallback for r in failed)   # calls are counted, not attempts
    seen = fake.request_count
    assert seen == 1 + 9
    later = [summarizer.summarize(request(f"b{i}")) for i in range(5)]
    assert fake.request_count == seen                     # the endpoint is not called again this run
    assert all("circuit open after 3 calls failed after their retries in a row" in r.fallback and r.calls == 0
               for r in later)
    assert summarizer.summarize(request("ok")).cached     # answers already paid for are still served


@pytest.mark.parametrize("provider", PROVIDERS)
def test_weather_does_not_open_the_circuit(make, fake, provider):
    """Overloaded, rate-limited and 500 attempts that retries carry are weather: the breaker counts calls
    that failed after their retries, a 429 never, and every success starts the count again."""
    summarizer = make(provider, breaker={"max_failures": 1}, retry={"attempts": 3})
    busy = overloaded(529 if provider == "anthropic" else 503)
    fake.script([busy, rate_limit(retry_after=0.01), None,                 # carried by the retries
                 server_error(500), busy, None,
                 rate_limit(0.01), rate_limit(0.01), rate_limit(0.01),     # a call that fails on 429s only
                 None])
    results = [summarizer.summarize(request(x)) for x in "abcd"]
    assert [r.fallback is None for r in results] == [True, True, False, True]
    assert "429" in results[2].fallback and "circuit" not in results[2].fallback
    assert fake.request_count == 10 and summarizer.calls.breaker.opened is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_context_length_error_is_split_even_when_the_circuit_is_open(make, fake, provider):
    """Other conversations' failures open the circuit between this one's 400 and its split: the split
    answers the 400 (the endpoint did answer), so it goes ahead; the next conversation is refused."""
    summarizer = make(provider)
    calls = summarizer.calls       # its requests: the provider's _send is replaced below
    send = calls._send

    async def opened_by_others_after_a_400(params):
        try:
            return await send(params)
        except Exception as exc:
            if calls._classify(exc) == "too_long":
                calls.breaker.opened = "circuit open (other conversations' calls failed)"
            raise

    calls._send = opened_by_others_after_a_400
    fake.script([context_length()])
    long = summarizer.summarize(request("long"))
    assert long.fallback.startswith("split-merged:") and long.calls == 4    # whole, two parts, the merge
    refused = summarizer.summarize(request("next"))
    assert "circuit open" in refused.fallback and refused.calls == 0


def test_an_endpoint_that_never_answered_opens_the_circuit_by_attempts(make, fake):
    """Nothing listens there: three refused attempts, not three calls of five retries each."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    summarizer = make("anthropic", base_url=f"http://127.0.0.1:{port}", breaker={"max_failures": 3},
                      retry={"attempts": 5})
    first = summarizer.summarize(request("a"))
    assert "circuit open after 3 attempts without an answer in a row" in first.fallback
    assert first.calls == 3
    assert summarizer.summarize(request("b")).calls == 0


def test_a_success_resets_the_count_of_failures_in_a_row(make, fake):
    summarizer = make("anthropic", breaker={"max_failures": 3}, retry={"attempts": 3})
    fake.script([server_error(500), server_error(500), None, server_error(500), server_error(500), None])
    assert summarizer.summarize(request("x")).fallback is None
    assert summarizer.summarize(request("y")).fallback is None   # 2 + 2 failures, never 3 in a row
