"""The JSON bodies the real Anthropic and OpenAI APIs answer with: errors, messages, completions."""
from __future__ import annotations

import time

from hermes_pipeline.testing.fake_faults import Fault
from hermes_pipeline.testing.fake_summary import ANTHROPIC, OPENAI, Prompt, approx_tokens

# Context windows used in context-length error messages when no limit is set.
_DEFAULT_CONTEXT_TOKENS = {ANTHROPIC: 200_000, OPENAI: 128_000}


def anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _openai_error(message: str, kind: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def context_error(provider: str, prompt_tokens: int, limit: int | None) -> tuple[int, dict]:
    limit = limit or _DEFAULT_CONTEXT_TOKENS[provider]
    tokens = max(prompt_tokens, limit + 1)  # the quoted count must exceed the limit
    if provider == ANTHROPIC:
        return 400, anthropic_error(
            "invalid_request_error", f"prompt is too long: {tokens} tokens > {limit} maximum"
        )
    return 400, _openai_error(
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )


_ANTHROPIC_5XX = {
    500: ("api_error", "Internal server error"),
    502: ("api_error", "Bad gateway"),
    503: ("api_error", "Service unavailable"),
    504: ("timeout_error", "Request timed out"),
}
_OPENAI_5XX = {
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway.",
    503: "The engine is currently overloaded, please try again later.",
    504: "Gateway timeout.",
}


def _anthropic_fault(fault: Fault) -> tuple[int, dict]:
    """Status and body of the real Anthropic API for each error kind."""
    kind = fault.kind
    if kind == "rate_limit":
        return 429, anthropic_error(
            "rate_limit_error",
            "This request would exceed the rate limit for your organization. Please retry later.",
        )
    if kind == "server_error":
        status = fault.status or 500
        return status, anthropic_error(*_ANTHROPIC_5XX.get(status, _ANTHROPIC_5XX[500]))
    if kind == "overloaded":
        return fault.status or 529, anthropic_error("overloaded_error", "Overloaded")
    if kind == "auth_error":
        return 401, anthropic_error("authentication_error", "invalid x-api-key")
    if kind == "forbidden":
        return 403, anthropic_error(
            "permission_error", "Your API key does not have permission to use the specified resource."
        )
    assert kind == "insufficient_quota", kind
    # Anthropic reports an exhausted balance as a 400, not a 429.
    return 400, anthropic_error(
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. "
        "Please go to Plans & Billing to upgrade or purchase credits.",
    )


def _openai_fault(fault: Fault) -> tuple[int, dict]:
    """Status and body of the real OpenAI API for each error kind."""
    kind = fault.kind
    if kind == "rate_limit":
        return 429, _openai_error(
            "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
        )
    if kind in ("server_error", "overloaded"):
        status = fault.status or (503 if kind == "overloaded" else 500)
        return status, _openai_error(_OPENAI_5XX.get(status, _OPENAI_5XX[500]), "server_error", None)
    if kind == "auth_error":
        return 401, _openai_error(
            "Incorrect API key provided. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )
    if kind == "forbidden":
        return 403, _openai_error(
            "Country, region, or territory not supported", "request_forbidden",
            "unsupported_country_region_territory",
        )
    assert kind == "insufficient_quota", kind
    return 429, _openai_error(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
    )


def anthropic_message(msg_id: str, model: str, text: str, stop: str, usage: dict) -> dict:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def openai_completion(msg_id: str, model: str, text: str, finish: str, usage: dict) -> dict:
    return {
        "id": msg_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": usage,
        "system_fingerprint": "fp_fake",
    }


def bad_request(provider: str, message: str) -> dict:
    if provider == ANTHROPIC:
        return anthropic_error("invalid_request_error", message)
    return _openai_error(message, "invalid_request_error", None)


def fault_response(provider: str, fault: Fault, prompt: Prompt) -> tuple[int, dict, dict]:
    if fault.kind == "context_length":
        status, body = context_error(provider, approx_tokens(prompt.total_chars), fault.limit_tokens)
    elif provider == ANTHROPIC:
        status, body = _anthropic_fault(fault)
    else:
        status, body = _openai_fault(fault)
    headers = {}
    if fault.kind == "rate_limit" and fault.retry_after is not None:
        headers["retry-after"] = f"{fault.retry_after:g}"
    return status, body, headers
