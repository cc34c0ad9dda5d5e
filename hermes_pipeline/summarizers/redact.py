"""Clean text at the summary boundary: secrets out, reasoning blocks out."""
from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_SECRET_PATTERNS = [
    # PEM private keys, whole block
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
    # provider keys: Anthropic, OpenAI, GitHub, Slack, AWS, Google, generic sk-
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),      # Stripe
    re.compile(r"\bhf_[A-Za-z0-9]{30,}"),                       # Hugging Face
    # JSON web tokens
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
]
# "Bearer <token>", "password=...", "api_key: ...", "GITHUB_TOKEN=...", "aws_secret_access_key = ..."
# keep the label, hide the value
_LABELLED = re.compile(
    r"(?i)(\bbearer\s+|\b(?:[a-z0-9]{1,32}[_-]){0,4}(?:api[_-]?key|secret(?:[_-]access[_-]key)?|token|password|passwd"
    r"|pwd|access[_-]?key)\\?[\"']?\s*[:=]\s*\\?[\"']?)([^\s\"',;\\]{6,})"     # \" inside JSON strings too
)
_URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.\-]{0,31}://[^\s:/@]+:)([^\s@/]+)(@)", re.I)
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|$)", re.S | re.I)


# Every pattern above needs one of these (case aside): a text without any is returned as it is, after
# one search instead of a dozen (probes redact every user turn and error line they keep).
_MAYBE_SECRET = re.compile(r"(?i)sk-|gh[pousr]_|github_pat_|xox[abprs]-|akia|aiza|_live_|_test_|hf_|eyj|-----begin|"
                           r"://|bearer|key|secret|token|passw|pwd")


def redact_secrets(text: str) -> str:
    if not _MAYBE_SECRET.search(text):
        return text
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    return _LABELLED.sub(lambda m: m.group(1) + REDACTED, text)


def strip_think(text: str) -> str:
    """Drop <think>…</think> blocks so they don't compound across updates."""
    return _THINK.sub("", text)
