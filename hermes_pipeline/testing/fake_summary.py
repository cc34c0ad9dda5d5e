"""A request as the fake provider reads it, and the deterministic summary it answers with."""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hermes_pipeline.testing.fake_exam import exam_reply

ANTHROPIC = "anthropic"
OPENAI = "openai"


def approx_tokens(chars: int) -> int:
    """Token estimate used everywhere in the fake: ceil(chars / 4)."""
    return math.ceil(chars / 4)


# --------------------------------------------------------------------------
# Request parsing
# --------------------------------------------------------------------------


@dataclass
class Prompt:
    """Provider-neutral view of a request, enough to summarize and bill it."""

    model: str
    max_tokens: int | None
    system: str
    messages: list[tuple[str, str]]  # (role, text)
    cached_blocks: list[str]  # texts marked for caching

    @property
    def total_chars(self) -> int:
        return len(self.system) + sum(len(text) for _, text in self.messages)


def _text_of(content: Any) -> str:
    """Flatten any content shape (string, block list, tool blocks) to plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(part) for part in content) if t)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        if "content" in content:  # tool_result blocks nest their content
            return _text_of(content["content"])
        if "input" in content:  # tool_use blocks carry JSON arguments
            return json.dumps(content["input"], sort_keys=True)
    return ""


def _cached_texts(blocks: Any) -> list[str]:
    """Texts of blocks carrying cache_control (only block lists can carry it)."""
    if not isinstance(blocks, list):
        return []
    return [_text_of(b) for b in blocks if isinstance(b, dict) and b.get("cache_control")]


def _parse_anthropic(body: dict) -> Prompt:
    messages, cached = [], _cached_texts(body.get("system"))
    for msg in body.get("messages") or []:
        messages.append((str(msg.get("role", "")), _text_of(msg.get("content"))))
        cached += _cached_texts(msg.get("content"))
    return Prompt(
        model=str(body.get("model", "")),
        max_tokens=body.get("max_tokens"),
        system=_text_of(body.get("system")),
        messages=messages,
        cached_blocks=cached,
    )


def _openai_message_text(msg: dict) -> str:
    """Message content plus any tool-call arguments an assistant message carries."""
    parts = [_text_of(msg.get("content"))]
    for call in msg.get("tool_calls") or []:
        parts.append(str((call.get("function") or {}).get("arguments", "")))
    return "\n".join(p for p in parts if p)


def _parse_openai(body: dict) -> Prompt:
    system, messages = [], []
    for msg in body.get("messages") or []:
        role, text = str(msg.get("role", "")), _openai_message_text(msg)
        # OpenAI has no separate system field; system/developer turns play that role.
        if role in ("system", "developer"):
            system.append(text)
        else:
            messages.append((role, text))
    return Prompt(
        model=str(body.get("model", "")),
        max_tokens=body.get("max_completion_tokens", body.get("max_tokens")),
        system="\n".join(system),
        messages=messages,
        cached_blocks=[],
    )


def parse_request(body: dict, provider: str) -> Prompt:
    return _parse_anthropic(body) if provider == ANTHROPIC else _parse_openai(body)


# --------------------------------------------------------------------------
# Deterministic summary
# --------------------------------------------------------------------------

_EXTS = (
    "py|pyi|ipynb|js|jsx|ts|tsx|mjs|cjs|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|md|rst|txt|"
    "csv|tsv|sql|sh|bash|zsh|ps1|rs|go|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|m|html|css|"
    "scss|xml|lock|log|proto|tf|dockerfile|gradle|mk"
)
# Either a path with an extension we recognise, or an absolute/relative path with a slash.
_PATH_RE = re.compile(
    rf"(?<![\w:/.@-])(?:"
    rf"(?:~|\.{{1,2}})?/?(?:[\w.-]+/)*[\w-][\w.-]*\.(?:{_EXTS})(?![\w-])"
    rf"|(?:~|\.{{1,2}})?/(?:[\w.-]+/)+[\w.-]+"
    rf")"
)
_CONSTRAINT_RE = re.compile(r"\b(must|never|always|don't|do not|prefer|avoid|required|should)\b", re.I)
_DONE_RE = re.compile(r"\b(done|completed?|fixed|implemented|added|passed|merged)\b", re.I)
_WIP_RE = re.compile(r"\b(in progress|working on|wip|currently|ongoing)\b", re.I)
_BLOCKED_RE = re.compile(r"\b(error|failed|failure|exception|blocked|traceback|cannot)\b", re.I)
_DECISION_RE = re.compile(r"\b(decided|decision|chose|chosen|going with|switched to|will use)\b", re.I)
_NEXT_RE = re.compile(r"\b(next|todo|follow[- ]up|then)\b", re.I)

_MAX_LINE = 160
_MAX_HITS = 3


def _clean(line: str) -> str:
    """One-line, heading-free, bounded copy of a transcript line."""
    line = re.sub(r"\s+", " ", line).strip().lstrip("#>*-• ").strip()
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 3] + "..."


def _lines(text: str) -> list[str]:
    return [c for c in (_clean(line) for line in text.splitlines()) if c]


def _hits(lines: list[str], pattern: re.Pattern[str]) -> list[str]:
    return [f"- {line}" for line in lines if pattern.search(line)][:_MAX_HITS]


def _file_paths(text: str, limit: int = 20) -> list[str]:
    found = dict.fromkeys(m.group(0).rstrip(".") for m in _PATH_RE.finditer(text))
    return list(found)[:limit]


def build_summary(prompt: Prompt) -> str:
    """Summary with the ten required headings, every one followed by request-derived lines (an exam's
    request gets the exam's JSON instead: fake_exam.py)."""
    exam = exam_reply(prompt.system, "\n".join(text for role, text in prompt.messages if role == "user"))
    if exam is not None:
        return exam
    body = "\n".join(text for _, text in prompt.messages)
    user_text = "\n".join(text for role, text in prompt.messages if role == "user")
    lines = _lines(body)
    user_lines = _lines(user_text) or lines or ["(no message text)"]
    roles = Counter(role for role, _ in prompt.messages)
    role_desc = ", ".join(f"{n} {r}" for r, n in sorted(roles.items())) or "none"
    digest = hashlib.sha256(user_text.encode("utf-8")).hexdigest()[:16]
    n = len(lines)
    sections = [
        ("## Goal", [f"- {user_lines[0]}"]),
        ("## Constraints & Preferences", _hits(lines, _CONSTRAINT_RE)
         or [f"- None stated; reply bounded by max_tokens={prompt.max_tokens} for model {prompt.model}"]),
        ("## Progress", [f"- Compacted {len(prompt.messages)} messages ({role_desc})"]),
        ("### Done", _hits(lines, _DONE_RE) or [f"- Read all {n} non-empty lines"]),
        ("### In Progress", _hits(lines, _WIP_RE) or [f"- Summarizing {prompt.total_chars} characters"]),
        ("### Blocked", _hits(lines, _BLOCKED_RE) or [f"- No blockers found in {n} lines"]),
        ("## Key Decisions", _hits(lines, _DECISION_RE) or [f"- No explicit decisions found in {n} lines"]),
        ("## Relevant Files", [f"- {p}" for p in _file_paths(body)]
         or ["- No file paths found in the request"]),
        ("## Next Steps", _hits(lines, _NEXT_RE) or [f"- Continue from: {user_lines[-1]}"]),
        ("## Critical Context", [
            f"- Request digest: sha256:{digest}",
            f"- Characters received: {prompt.total_chars}",
            f"- Model: {prompt.model}",
        ]),
    ]
    return "\n\n".join("\n".join([title, *items]) for title, items in sections) + "\n"


def summarize_request(body: dict, provider: str = ANTHROPIC) -> str:
    """The exact text a normal (fault-free) reply to `body` carries."""
    return build_summary(parse_request(body, provider))
