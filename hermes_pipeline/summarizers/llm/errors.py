"""How a failed LLM call is read: its class (retry, too long, fatal, fail), the wait the
server asked for, and a one-line description. Shared by both providers' summarizers.
"""
from __future__ import annotations

import email.utils
import re
import time

RETRY_STATUS = {408, 429, 500, 501, 502, 503, 504, 529}
AUTH_STATUS = {401, 402, 403}
_QUOTA = re.compile(r"insufficient[_ ]quota|credit balance is too low|billing_error", re.I)
_TOO_LONG = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens"
    r"|input is too long|reduce the length|request_too_large|too large for", re.I)


class BadReply(Exception):
    """The model answered, but not with a usable summary (retryable)."""

    def __init__(self, message: str, cut: bool = False):
        super().__init__(message)
        self.cut = cut


class ContextTooLong(Exception):
    """The provider rejected the input as longer than the model's window."""


class AuthOrQuota(Exception):
    """401/403/insufficient quota: no point in trying other conversations."""


class CircuitOpen(Exception):
    """The endpoint failed too often in a row: it is not called again this run."""


class Gathered(BaseException):
    """Batch mode's first pass: the request was written down for a batch instead of sent. A
    BaseException, so that no `except Exception` on the way (a fallback, a stage) takes it for a failure."""


def classify_item(status: int | None, kind: str, message: str) -> str:
    """"too_long" | "fatal" | "failed" for a batch item the provider answered with an error."""
    text = f"{kind} {message}"
    if status in AUTH_STATUS or kind in ("authentication_error", "permission_error") or _QUOTA.search(text):
        return "fatal"
    if (status in (None, 400, 413, 422) or kind == "invalid_request_error") and _TOO_LONG.search(text):
        return "too_long"
    return "failed"


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, retry-after seconds or date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(float(value), 0.0)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(when.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, OverflowError):
        return None


def classify(exc: BaseException, status_error: type[BaseException],
             connection_error: type[BaseException]) -> str:
    """"retry" | "too_long" | "fatal" | "fail" for one failed attempt; the error types are the SDK's."""
    if isinstance(exc, BadReply):
        return "retry"
    if isinstance(exc, ContextTooLong):
        return "too_long"
    if isinstance(exc, AuthOrQuota):
        return "fatal"
    import asyncio  # here, not at the top: the embedded summarizer's runs import this module and no SDK
    if isinstance(exc, (asyncio.TimeoutError, connection_error)):
        return "retry"
    if isinstance(exc, status_error):
        status = getattr(exc, "status_code", 0)
        text = f"{getattr(exc, 'body', '')} {getattr(exc, 'message', '')}"
        if status in AUTH_STATUS or _QUOTA.search(text):
            return "fatal"
        if status == 413 or (status in (400, 422) and _TOO_LONG.search(text)):
            return "too_long"
        if status in RETRY_STATUS:
            return "retry"
    return "fail"


def describe(exc: BaseException) -> str:
    """`Type status: kind: message` on one line, not yet scrubbed of secrets."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    detail = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            kind = error.get("type") or error.get("code")
            detail = f"{kind}: {error.get('message', '')}" if kind else str(error.get("message", detail))
    text = f"{type(exc).__name__}" + (f" {status}" if status else "") + f": {detail}"
    return " ".join(text.split())
