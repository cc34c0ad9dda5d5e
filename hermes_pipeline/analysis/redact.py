"""Clean text at the summary boundary: secrets out, reasoning blocks out."""
from __future__ import annotations

import re
from bisect import bisect_right

from hermes_pipeline.analysis.artifacts import string_leaves

REDACTED = "[REDACTED]"

_SECRET_PATTERNS = [
    # PEM private keys, whole block
    # (its body, base64 lines, up to its END line or where it was cut off: not the rest of a text that only
    # names the armor, as a secret scanner's rule file does)
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:\s|\\[nr])*[A-Za-z0-9+/=](?:[A-Za-z0-9+/=\s]|\\[nr])*"
               r"(?:-----END [A-Z ]*PRIVATE KEY-----)?"),
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


# What each family of patterns needs to find anything: a text without it skips that family's scan. The key
# patterns are case-sensitive. A labelled value needs one of _LABELLED's label words followed by its separator
# and a value; the label words are looked for in the lowered text (a case-insensitive alternation is scanned
# several times slower). A URL's credentials need "://" followed by user:password@.
_KEY_HINT = re.compile(r"sk-|gh[pousr]_|github_pat_|xox[abprs]-|AKIA|AIza|_live_|_test_|hf_|eyJ|-----BEGIN")
_URL_HINT = "://"
_AFTER_LABEL = r"\\?[\"']?\s*[:=]\s*\\?[\"']?[^\s\"',;\\]{6}"
# The same needs as literals for str.find (it scans several times faster than one regex of them all), each
# with what must follow where it is found: (literal, pattern matched there or None, searched in lowered text)
_HINTS = (
    *((literal, None, False) for literal in ("sk-", "github_pat_", "AKIA", "AIza", "_live_", "_test_", "hf_", "eyJ",
                                             "-----BEGIN")),
    ("gh", re.compile(r"gh[pousr]_"), False),
    ("xox", re.compile(r"xox[abprs]-"), False),
    (_URL_HINT, re.compile(r"://[^\s:/@]+:[^\s@/]+@"), False),
    # api_key, access-key, secret_access_key... (the label words end in key, secret, token, password, passwd, pwd)
    ("key", re.compile(r"(?:(?<=api)|(?<=api[_-])|(?<=access)|(?<=access[_-]))key" + _AFTER_LABEL), True),
    ("secret", re.compile("secret" + _AFTER_LABEL), True),
    ("token", re.compile("token" + _AFTER_LABEL), True),
    ("passw", re.compile("passw(?:or)?d" + _AFTER_LABEL), True),
    ("pwd", re.compile("pwd" + _AFTER_LABEL), True),
    ("bearer", re.compile(r"bearer\s+[^\s\"',;\\]{6}"), True),
)
# the characters (?i) matches to a letter of those words that str.lower() does not lower to it
_FOLDS_TO_ASCII = {"\u0130": "i", "\u0131": "i", "\u017f": "s"}      # İ, dotless ı, long ſ


def _lowered(text: str) -> str:
    """`text` lowered as (?i) compares it with the label words; as long as `text` (İ alone lowers to two
    characters, and it is folded first)."""
    if not text.isascii():
        for odd, letter in _FOLDS_TO_ASCII.items():
            if odd in text:
                text = text.replace(odd, letter)
    return text.lower()


def _find_all(text: str, literal: str):
    at = text.find(literal)
    while at >= 0:
        yield at
        at = text.find(literal, at + 1)


def _hint_positions(text: str, lowered: str):
    """Where in `text` (`lowered`: the same, lowered) a secret pattern may match: each hint found."""
    for literal, then, in_lowered in _HINTS:
        within = lowered if in_lowered else text
        yield from (at for at in _find_all(within, literal) if then is None or then.match(within, at))


def _has_label(text: str) -> bool:
    lowered = _lowered(text)
    return any(then.match(lowered, at) for literal, then, in_lowered in _HINTS if in_lowered
               for at in _find_all(lowered, literal))


def _starts(texts: list[str]) -> list[int]:
    """Where each text starts in the texts joined by one separator."""
    starts, at = [], 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    return starts


def suspects(texts: list[str]) -> set[int]:
    """The indices of the texts a secret pattern may match; every other text holds none (redact_secrets
    leaves it as it is, secrets_in finds nothing in it). One pass over the texts joined, literals first:
    most conversations hold no key prefix, no `://` and no `token=`, and the patterns run on none of them."""
    joined, starts = "\0".join(texts), _starts(texts)   # no hint spans a NUL: none holds one, \s matches none
    lowered = _lowered(joined)
    if len(lowered) != len(joined):     # a lower case longer than its letter, beside İ: positions differ
        return set(range(len(texts)))
    return {bisect_right(starts, at) - 1 for at in _hint_positions(joined, lowered)}


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
    texts = list(texts)
    for text in (texts[i] for i in sorted(suspects(texts))):
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
