"""The fake provider, exercised through the real anthropic and openai SDKs."""

from __future__ import annotations

import hashlib
import json
import math
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import anthropic
import openai
import pytest

from hermes_pipeline.testing import fake_provider as fp
from testkit.env import ROOT

HEADINGS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Relevant Files",
    "## Next Steps",
    "## Critical Context",
]

TRANSCRIPT = (
    "Refactor the loader in src/hermes/loader.py\n"
    "We must keep tests/test_loader.py green.\n"
    "Implemented the retry wrapper in lib/retry.py - done.\n"
    "Currently working on the JSONL reader.\n"
    "pytest failed with KeyError in conf/settings.yaml\n"
    "Decided to use tenacity for backoff.\n"
    "Next: wire the reader into the CLI."
)
SYSTEM = "You compact agent transcripts into structured summaries. " * 8


@pytest.fixture
def fake():
    with fp.FakeProvider() as provider:
        yield provider


def make_anthropic(fake, timeout: float = 10.0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.base_url, api_key="test-key", max_retries=0, timeout=timeout)


def make_openai(fake, timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url + "/v1", api_key="test-key", max_retries=0, timeout=timeout)


def ask_anthropic(client, text: str = TRANSCRIPT, **extra):
    kwargs = {"model": "claude-test", "max_tokens": 2048, "messages": [{"role": "user", "content": text}]}
    kwargs.update(extra)
    return client.messages.create(**kwargs)


def ask_openai(client, text: str = TRANSCRIPT, system: str = SYSTEM):
    return client.chat.completions.create(
        model="gpt-test",
        max_tokens=2048,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": text}],
    )


def section(text: str, heading: str) -> list[str]:
    """Lines under `heading` up to the next heading."""
    lines = text.splitlines()
    start = lines.index(heading) + 1
    body = []
    for line in lines[start:]:
        if line.startswith("#"):
            break
        if line.strip():
            body.append(line)
    return body


def assert_summary_shape(text: str) -> None:
    positions = [text.index(h + "\n") for h in HEADINGS]
    assert positions == sorted(positions), "headings out of order"
    for heading in HEADINGS:
        assert section(text, heading), f"{heading} has no content"


# --- success paths ---------------------------------------------------------


def test_anthropic_success_parses_into_message(fake):
    msg = ask_anthropic(make_anthropic(fake), system=SYSTEM)

    assert isinstance(msg, anthropic.types.Message)
    assert msg.stop_reason == "end_turn"
    assert msg.model == "claude-test"
    text = msg.content[0].text
    assert_summary_shape(text)
    assert section(text, "## Relevant Files") == [
        "- src/hermes/loader.py",
        "- tests/test_loader.py",
        "- lib/retry.py",
        "- conf/settings.yaml",
    ]
    digest = hashlib.sha256(TRANSCRIPT.encode()).hexdigest()[:16]
    assert f"- Request digest: sha256:{digest}" in section(text, "## Critical Context")
    assert f"- Characters received: {len(SYSTEM) + len(TRANSCRIPT)}" in text
    assert any("KeyError" in line for line in section(text, "### Blocked"))
    assert msg.usage.input_tokens == math.ceil((len(SYSTEM) + len(TRANSCRIPT)) / 4)
    assert msg.usage.output_tokens == math.ceil(len(text) / 4)
    assert msg.usage.cache_creation_input_tokens == 0
    assert msg.usage.cache_read_input_tokens == 0


def test_openai_success_parses_into_completion(fake):
    completion = ask_openai(make_openai(fake))

    choice = completion.choices[0]
    assert completion.object == "chat.completion"
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    text = choice.message.content
    assert_summary_shape(text)
    assert "- lib/retry.py" in section(text, "## Relevant Files")
    usage = completion.usage
    assert usage.prompt_tokens == math.ceil((len(SYSTEM) + len(TRANSCRIPT)) / 4)
    assert usage.completion_tokens == math.ceil(len(text) / 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens == 0


def test_same_request_gives_same_text_and_different_request_differs(fake):
    client = make_anthropic(fake)
    first = ask_anthropic(client).content[0].text
    second = ask_anthropic(client).content[0].text
    other = ask_anthropic(client, text=TRANSCRIPT + "\nextra line").content[0].text

    assert first == second
    assert other != first
    assert first == fp.summarize_request(fake.requests[0]["body"])


def test_openai_and_anthropic_texts_agree_for_same_content(fake):
    a_text = ask_anthropic(make_anthropic(fake), system=SYSTEM).content[0].text
    o_text = ask_openai(make_openai(fake)).choices[0].message.content
    # Only the model line differs between the two providers.
    strip_model = lambda t: re.sub(r"- Model: .*", "", t)  # noqa: E731
    assert strip_model(a_text) == strip_model(o_text)


# --- faults ----------------------------------------------------------------

ANTHROPIC_FAULTS = [
    (fp.rate_limit(retry_after=3), anthropic.RateLimitError, 429, "rate_limit_error"),
    (fp.server_error(500), anthropic.InternalServerError, 500, "api_error"),
    (fp.server_error(502), anthropic.InternalServerError, 502, "api_error"),
    (fp.server_error(503), anthropic.InternalServerError, 503, "api_error"),
    (fp.server_error(504), anthropic.InternalServerError, 504, "timeout_error"),
    (fp.overloaded(), anthropic.APIStatusError, 529, "overloaded_error"),
    (fp.context_length(), anthropic.BadRequestError, 400, "invalid_request_error"),
    (fp.auth_error(), anthropic.AuthenticationError, 401, "authentication_error"),
    (fp.forbidden(), anthropic.PermissionDeniedError, 403, "permission_error"),
    (fp.insufficient_quota(), anthropic.BadRequestError, 400, "invalid_request_error"),
]


@pytest.mark.parametrize("fault, exc, status, error_type", ANTHROPIC_FAULTS, ids=lambda v: getattr(v, "kind", None))
def test_anthropic_faults_map_to_sdk_exceptions(fake, fault, exc, status, error_type):
    fake.script([fault])
    with pytest.raises(exc) as info:
        ask_anthropic(make_anthropic(fake))

    err = info.value
    assert err.status_code == status
    assert err.body["type"] == "error"
    assert err.body["error"]["type"] == error_type


OPENAI_FAULTS = [
    (fp.rate_limit(retry_after=3), openai.RateLimitError, 429, "rate_limit_exceeded"),
    (fp.server_error(500), openai.InternalServerError, 500, None),
    (fp.server_error(504), openai.InternalServerError, 504, None),
    (fp.overloaded(), openai.InternalServerError, 503, None),
    (fp.context_length(), openai.BadRequestError, 400, "context_length_exceeded"),
    (fp.auth_error(), openai.AuthenticationError, 401, "invalid_api_key"),
    (fp.forbidden(), openai.PermissionDeniedError, 403, "unsupported_country_region_territory"),
    (fp.insufficient_quota(), openai.RateLimitError, 429, "insufficient_quota"),
]


@pytest.mark.parametrize("fault, exc, status, code", OPENAI_FAULTS, ids=lambda v: getattr(v, "kind", None))
def test_openai_faults_map_to_sdk_exceptions(fake, fault, exc, status, code):
    fake.script([fault])
    with pytest.raises(exc) as info:
        ask_openai(make_openai(fake))

    assert info.value.status_code == status
    assert info.value.code == code


def test_anthropic_overloaded_is_529_overloaded_error(fake):
    fake.script([fp.overloaded()])
    with pytest.raises(anthropic.APIStatusError) as info:
        ask_anthropic(make_anthropic(fake))
    assert info.value.status_code == 529
    assert info.value.body["error"]["message"] == "Overloaded"


def test_context_length_messages_match_provider_wording(fake):
    fake.script([fp.context_length(limit_tokens=1000), fp.context_length(limit_tokens=1000)])
    with pytest.raises(anthropic.BadRequestError) as a_info:
        ask_anthropic(make_anthropic(fake))
    with pytest.raises(openai.BadRequestError) as o_info:
        ask_openai(make_openai(fake))

    assert re.fullmatch(r"prompt is too long: \d+ tokens > 1000 maximum", a_info.value.body["error"]["message"])
    assert o_info.value.body["param"] == "messages"
    assert o_info.value.body["type"] == "invalid_request_error"
    assert "maximum context length is 1000 tokens" in o_info.value.body["message"]


def test_rate_limit_sends_retry_after_header(fake):
    fake.script([fp.rate_limit(retry_after=7), fp.rate_limit(retry_after=0.5), fp.rate_limit(retry_after=None)])
    with pytest.raises(anthropic.RateLimitError) as a_info:
        ask_anthropic(make_anthropic(fake))
    with pytest.raises(openai.RateLimitError) as o_info:
        ask_openai(make_openai(fake))
    with pytest.raises(openai.RateLimitError) as bare_info:
        ask_openai(make_openai(fake))

    assert a_info.value.response.headers["retry-after"] == "7"
    assert o_info.value.response.headers["retry-after"] == "0.5"
    assert "retry-after" not in bare_info.value.response.headers


def test_script_is_consumed_in_order_then_normal(fake):
    client = make_anthropic(fake)
    fake.script([None, {"kind": "server_error", "status": 503}, "auth_error"])

    assert ask_anthropic(client).stop_reason == "end_turn"
    with pytest.raises(anthropic.InternalServerError):
        ask_anthropic(client)
    with pytest.raises(anthropic.AuthenticationError):
        ask_anthropic(client)
    assert ask_anthropic(client).stop_reason == "end_turn"
    assert fake.pending_faults == []
    assert [r["fault"] for r in fake.requests] == [None, "server_error", "auth_error", None]


def test_unknown_fault_kind_is_rejected(fake):
    with pytest.raises(ValueError):
        fake.script([{"kind": "explode"}])
    with pytest.raises(ValueError):
        fp.server_error(418)


def test_hang_trips_the_client_timeout(fake):
    fake.script([fp.hang(60), fp.hang(60)])     # the clients give up long before (stopping the server ends it)
    with pytest.raises(anthropic.APITimeoutError):
        ask_anthropic(make_anthropic(fake, timeout=0.5))
    with pytest.raises(openai.APITimeoutError):
        ask_openai(make_openai(fake, timeout=0.5))


def test_latency_delays_but_succeeds(fake):
    client = make_openai(fake)
    fake.default_latency = 0.2
    fake.script([fp.latency(0.3)])

    started = time.monotonic()
    ask_openai(client)
    first = time.monotonic() - started
    started = time.monotonic()
    ask_openai(client)
    second = time.monotonic() - started

    assert first >= 0.5 and second >= 0.2
    assert [r["fault"] for r in fake.requests] == ["latency", None]     # the extra latency was the first's only


def test_truncated_and_empty_come_through(fake):
    a_client, o_client = make_anthropic(fake), make_openai(fake)
    fake.script([fp.truncated(), fp.truncated(), fp.empty(), fp.empty()])

    a_cut = ask_anthropic(a_client)
    o_cut = ask_openai(o_client)
    a_empty = ask_anthropic(a_client)
    o_empty = ask_openai(o_client)

    assert a_cut.stop_reason == "max_tokens"
    assert "## Critical Context" not in a_cut.content[0].text
    assert a_cut.content[0].text.startswith("## Goal")
    assert o_cut.choices[0].finish_reason == "length"
    assert "## Critical Context" not in o_cut.choices[0].message.content
    assert a_empty.stop_reason == "end_turn"
    assert a_empty.content[0].text.strip() == "" and a_empty.content[0].text != ""
    assert o_empty.choices[0].message.content.strip() == ""


def test_max_input_chars_rejects_big_requests_and_accepts_halves(fake):
    fake.max_input_chars = 200
    client = make_anthropic(fake)
    big = "x" * 150 + "\n" + "y" * 150

    with pytest.raises(anthropic.BadRequestError) as info:
        ask_anthropic(client, text=big)
    assert "prompt is too long: 76 tokens > 50 maximum" in info.value.body["error"]["message"]
    with pytest.raises(openai.BadRequestError) as o_info:
        ask_openai(make_openai(fake), text=big, system="")
    assert o_info.value.code == "context_length_exceeded"

    for half in big.split("\n"):
        assert ask_anthropic(client, text=half).stop_reason == "end_turn"


# --- caching ---------------------------------------------------------------


def test_anthropic_cache_creation_then_read(fake):
    client = make_anthropic(fake)
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    cached_tokens = math.ceil(len(SYSTEM) / 4)

    first = ask_anthropic(client, system=system).usage
    second = ask_anthropic(client, system=system).usage
    other = ask_anthropic(client, system=[{**system[0], "text": SYSTEM + "v2"}]).usage

    assert (first.cache_creation_input_tokens, first.cache_read_input_tokens) == (cached_tokens, 0)
    assert (second.cache_creation_input_tokens, second.cache_read_input_tokens) == (0, cached_tokens)
    assert other.cache_creation_input_tokens > 0 and other.cache_read_input_tokens == 0
    assert first.input_tokens == second.input_tokens == math.ceil(len(TRANSCRIPT) / 4)


def test_anthropic_uncached_system_blocks_do_not_count_as_cache(fake):
    client = make_anthropic(fake)
    system = [{"type": "text", "text": SYSTEM}]
    for _ in range(2):
        usage = ask_anthropic(client, system=system).usage
        assert usage.cache_creation_input_tokens == usage.cache_read_input_tokens == 0


def test_openai_reports_cached_tokens_for_repeated_long_prefix(fake):
    client = make_openai(fake)
    long_system = "Keep every file path and decision. " * 150  # > 1024 tokens

    first = ask_openai(client, system=long_system).usage
    second = ask_openai(client, system=long_system).usage

    assert first.prompt_tokens_details.cached_tokens == 0
    assert second.prompt_tokens_details.cached_tokens == math.ceil(len(long_system) / 4)
    assert second.prompt_tokens == first.prompt_tokens  # cached tokens are part of the prompt


# --- recording and counters ------------------------------------------------


def test_requests_are_recorded_with_secrets_redacted(fake):
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    ask_anthropic(make_anthropic(fake), system=system, max_tokens=321)
    ask_openai(make_openai(fake))

    a_req, o_req = fake.requests
    assert (a_req["method"], a_req["path"]) == ("POST", "/v1/messages")
    assert (o_req["method"], o_req["path"]) == ("POST", "/v1/chat/completions")
    assert a_req["body"]["model"] == "claude-test"
    assert a_req["body"]["max_tokens"] == 321
    assert a_req["body"]["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert a_req["body"]["messages"] == [{"role": "user", "content": TRANSCRIPT}]
    assert "anthropic-version" in a_req["headers"]
    assert o_req["body"]["messages"][0] == {"role": "system", "content": SYSTEM}
    for req in fake.requests:
        assert "test-key" not in json.dumps(req["headers"])
        assert req["headers"]["authorization"] == "<redacted>"


def test_counters_track_totals_and_paths(fake):
    ask_anthropic(make_anthropic(fake))
    ask_anthropic(make_anthropic(fake))
    ask_openai(make_openai(fake))
    request = urllib.request.Request(fake.base_url + "/v1/nope", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)

    assert info.value.code == 404
    assert fake.request_count == 4
    assert fake.path_counts == {"/v1/messages": 2, "/v1/chat/completions": 1, "/v1/nope": 1}
    fake.reset()
    assert fake.request_count == 0 and fake.path_counts == {}


def test_paths_without_v1_prefix_are_served(fake):
    # e.g. an OpenAI-compatible base_url configured without "/v1"
    bare = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0, timeout=5)
    text = bare.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": TRANSCRIPT}]
    ).choices[0].message.content
    body = json.dumps({"model": "claude-test", "max_tokens": 50, "messages": [{"role": "user", "content": "x"}]})
    request = urllib.request.Request(fake.base_url + "/messages", data=body.encode(), method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        reply = json.load(response)

    assert_summary_shape(text)
    assert reply["type"] == "message" and reply["stop_reason"] == "end_turn"
    assert fake.path_counts == {"/chat/completions": 1, "/messages": 1}


def test_streaming_is_refused_with_a_clear_error(fake):
    with pytest.raises(anthropic.BadRequestError, match="streaming"):
        make_anthropic(fake).messages.create(
            model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "x"}], stream=True
        )


# --- CLI -------------------------------------------------------------------


def test_cli_serves_until_interrupted():
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_pipeline.testing.fake_provider", "--port", "0", "--quiet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        urls = {}
        for _ in range(2):
            line = proc.stdout.readline()
            name, _, rest = line.partition("base_url:")
            urls[name.strip()] = rest.split()[0]
        assert urls["openai"] == urls["anthropic"] + "/v1"
        client = anthropic.Anthropic(base_url=urls["anthropic"], api_key="test-key", max_retries=0, timeout=5)
        assert ask_anthropic(client).stop_reason == "end_turn"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0


# ---- the batch APIs ------------------------------------------------------------------

def test_anthropic_message_batches_with_errored_expired_and_a_slow_finish(fake):
    fake.batches.polls_in_progress = 1
    fake.batches.outcomes.extend([None, "errored", "expired"])
    client = make_anthropic(fake)
    params = lambda i: {"model": "claude-test", "max_tokens": 500,
                        "messages": [{"role": "user", "content": f"{TRANSCRIPT} ({i})"}]}
    batch = client.messages.batches.create(requests=[{"custom_id": f"k{i}", "params": params(i)} for i in range(3)])
    assert batch.processing_status == "in_progress" and batch.request_counts.processing == 3
    assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"    # the slow finish
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended"
    assert (ended.request_counts.succeeded, ended.request_counts.errored, ended.request_counts.expired) == (1, 1, 1)
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["k0"].type == "succeeded" and results["k0"].message.content[0].text == \
        fp.summarize_request(params(0))                   # the answer a plain call gets
    assert results["k1"].type == "errored" and results["k1"].error.error.type == "api_error"
    assert results["k2"].type == "expired"


def test_openai_batch_over_an_uploaded_file_with_a_failing_poll_and_a_cancel(fake):
    fake.max_input_chars = 2000                           # the long item is refused as it would be alone
    fake.batches.script_polls([fp.server_error(503)])
    client = make_openai(fake)
    lines = [{"custom_id": f"k{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "gpt-test", "messages": [{"role": "user", "content": text}]}}
             for i, text in enumerate([TRANSCRIPT, TRANSCRIPT * 10])]
    upload = client.files.create(file=("in.jsonl", "\n".join(map(json.dumps, lines)).encode(), "application/jsonl"),
                                 purpose="batch")
    batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.InternalServerError):
        client.batches.retrieve(batch.id)                 # the first look fails
    while (found := client.batches.retrieve(batch.id)).status != "completed":
        assert found.status == "in_progress"
    assert (found.request_counts.completed, found.request_counts.failed) == (1, 1)
    output = [json.loads(line) for line in client.files.content(found.output_file_id).text.splitlines()]
    errors = [json.loads(line) for line in client.files.content(found.error_file_id).text.splitlines()]
    assert output[0]["custom_id"] == "k0" and output[0]["response"]["body"]["choices"][0]["message"]["content"] == \
        fp.summarize_request(lines[0]["body"], "openai")
    assert errors[0]["custom_id"] == "k1" and errors[0]["response"]["status_code"] == 400
    assert errors[0]["response"]["body"]["error"]["code"] == "context_length_exceeded"
    again = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert client.batches.cancel(again.id).status == "cancelling"
    cancelled = client.batches.retrieve(again.id)
    assert cancelled.status == "cancelled" and cancelled.output_file_id is None
    assert all(json.loads(line)["error"]["code"] == "batch_cancelled"
               for line in client.files.content(cancelled.error_file_id).text.splitlines())
    assert fake.batches.created["openai"] == 2 and "/v1/chat/completions" not in fake.path_counts
