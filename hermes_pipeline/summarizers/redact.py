"""Clean text at the summary boundary: secrets out, reasoning blocks out."""
from __future__ import annotations

import re

from hermes_pipeline.analysis.artifacts import string_leaves

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


# What each family of patterns needs to find anything: a text without it skips that family's scan (probes
# redact every user turn and error line they keep, and most hold none). The key patterns are case-sensitive;
# the labels are searched in the lowered text, as a case-insensitive alternation is scanned several times slower.
_KEY_HINT = re.compile(r"sk-|gh[pousr]_|github_pat_|xox[abprs]-|AKIA|AIza|_live_|_test_|hf_|eyJ|-----BEGIN")
_LABEL_HINT_LOWER = re.compile(r"bearer|key|secret|token|passw|pwd")
_URL_HINT = "://"


def _has_label(text: str) -> bool:
    return _LABEL_HINT_LOWER.search(text.lower()) is not None


def redact_secrets(text: str) -> str:
    if _KEY_HINT.search(text):
        for pattern in _SECRET_PATTERNS:    # one by one, in order: a private key block first, whatever touches it
            text = pattern.sub(REDACTED, text)
    if _URL_HINT in text:
        text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    if _has_label(text):
        text = _LABELLED.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def redact_deep(value):
    """A message (or any JSON value) with every string redacted: what a summarizer may read names from."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {k: redact_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_deep(v) for v in value]
    return value


# A fragment of a secret this long is not let through, wherever a summary got it from (a "name" split out
# of a key at its dashes, a URL's password, an identifier of a tool result).
FRAGMENT_CHARS = 6
_PEM_ARMOR = re.compile(r"-----(?:BEGIN|END) [A-Z ]*PRIVATE KEY-----")
# a labelled value that looks like a key: one run of key characters, letters and digits both (no `tenant.py:378`
# of a log's `emberhub.token:tenant.py:378`, no `os.environ[...]`, no `token: string`)
_KEY_SHAPED = re.compile(r"(?=.*[A-Za-z])(?=.*\d)[\w\-+/=!@#%^&*~]{8,}")
_TOKEN_AROUND = re.compile(r"[^\s\[\]()<>\"'`,;]*")


def secrets_in(texts) -> set[str]:
    """The secret values these texts hold, as redact_secrets finds them; a labelled value only when it is
    key-shaped (every fragment of what it finds is kept out of a summary: a word of code or a log's
    `logger.token:file.py:12` must not be)."""
    found: set[str] = set()
    for text in texts:
        if _KEY_HINT.search(text):
            for pattern in _SECRET_PATTERNS:
                found.update(_PEM_ARMOR.sub("", m.group(0)) for m in pattern.finditer(text))
        if _URL_HINT in text:
            found.update(m.group(2) for m in _URL_CREDENTIALS.finditer(text))
        if _has_label(text):
            found.update(v for v in (m.group(2) for m in _LABELLED.finditer(text)) if _KEY_SHAPED.fullmatch(v))
    return {s for s in found if len(s) >= FRAGMENT_CHARS}


def without_fragments(text: str, secrets) -> str:
    """`text` with every word holding FRAGMENT_CHARS or more characters of one of `secrets` redacted."""
    grams = {s[i:i + FRAGMENT_CHARS] for s in secrets for i in range(len(s) - FRAGMENT_CHARS + 1)}
    if not grams:
        return text
    n, hits = FRAGMENT_CHARS, []
    for i in range(len(text) - n + 1):
        if text[i:i + n] in grams:
            if hits and i <= hits[-1][1]:
                hits[-1][1] = i + n
            else:
                hits.append([i, i + n])
    for start, end in reversed(hits):      # the whole word around each hit
        start -= len(_TOKEN_AROUND.match(text[::-1], len(text) - start).group(0))
        end += len(_TOKEN_AROUND.match(text, end).group(0))
        text = text[:start] + REDACTED + text[end:]
    return text


def strip_think(text: str) -> str:
    """Drop <think>…</think> blocks so they don't compound across updates."""
    return _THINK.sub("", text)


def redact_summary(text: str, conversation) -> str:
    """A summary as it may leave: secrets redacted, and no word holding a fragment of a secret that
    `conversation` (its messages, any JSON) shows."""
    return without_fragments(redact_secrets(text), secrets_in(string_leaves(conversation)))
