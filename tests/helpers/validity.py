"""Checks every compacted transcript must pass; shared by the tests."""
from __future__ import annotations

import json

from hermes_pipeline.transcript import unmarked
from hermes_pipeline.stages.prune import PRUNED_TOOL_OUTPUT, SHORTENED_MARK
from hermes_pipeline.transcript import (
    COMPACTION_NOTE, SUMMARY_END, is_summary_message, pairing_problems, text_of, tool_calls, visible_role,
)

SHORTENED = SHORTENED_MARK.split("}", 1)[1].split("...", 1)[0]    # the marker's fixed words


def normalize(message: dict) -> dict:
    """A message without cache markers; a single text block back to its string."""
    return unmarked(message)


def without_note(message: dict) -> dict:
    message = normalize(message)
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = content.replace("\n\n" + COMPACTION_NOTE, "").replace(COMPACTION_NOTE, "")
    elif isinstance(content, list):
        message["content"] = [p for p in content if not (isinstance(p, dict) and p.get("text") == COMPACTION_NOTE)]
        message = normalize(message)
    return message


def changed_by_fit(kept: dict, source: dict) -> bool:
    """A head or tail message as the fit step may leave it (engine/fit.py): a tool output cleared, or shortened
    to its own start and end around a marker; long tool-call arguments shortened, the calls the same and their
    arguments still valid JSON. A user message never."""
    if kept.get("role") == "tool" and source.get("role") == "tool":
        text = kept.get("content")
        if {**kept, "content": None} != {**source, "content": None} or not isinstance(text, str):
            return False
        if text == PRUNED_TOOL_OUTPUT:
            return True
        start, marker, end = text.partition("\n[... ")
        original = text_of(source.get("content"))
        return bool(marker) and SHORTENED in end and original.startswith(start) \
            and original.endswith(end.split(" ...]\n", 1)[-1] if " ...]\n" in end else "")
    if kept.get("role") == "assistant" and tool_calls(kept):
        if {**kept, "tool_calls": None} != {**source, "tool_calls": None} \
                or len(tool_calls(kept)) != len(tool_calls(source)):
            return False
        for mine, theirs in zip(tool_calls(kept), tool_calls(source)):
            if mine.get("id") != theirs.get("id") or mine["function"]["name"] != theirs["function"]["name"]:
                return False
            json.loads(mine["function"]["arguments"])
        return True
    return False


def _same(kept: dict, source: dict, fitted: bool, from_end: int) -> bool:
    """Verbatim, except what the fit step may change (`fitted`), or else the older tool outputs an oversized
    tail demotes (REFERENCE §6: the last 3 messages stay as they are)."""
    kept, source = normalize(kept), normalize(source)
    if kept == source:
        return True
    if fitted:
        return changed_by_fit(kept, source)
    return from_end > 3 and kept.get("role") == "tool" and kept.get("content") == PRUNED_TOOL_OUTPUT \
        and {**kept, "content": None} == {**source, "content": None}


def _tail_matches(tail: list[dict], original: list[dict], fitted: bool) -> bool:
    return len(tail) == len(original) and all(
        _same(kept, source, fitted, len(tail) - i) for i, (kept, source) in enumerate(zip(tail, original)))


def _head_matches(head: list[dict], original: list[dict], fitted: bool) -> bool:
    return len(head) == len(original) and all(
        _same(without_note(kept), without_note(source), fitted, 0) for kept, source in zip(head, original))


def _unmerged(message: dict) -> dict | None:
    """The tail message a summary was merged into, without the summary; None for a summary of its own."""
    content = message.get("content")
    if isinstance(content, list) and len(content) > 1 and isinstance(content[0], dict) \
            and SUMMARY_END in str(content[0].get("text", "")):
        return {**message, "content": content[1:]}
    text = content if isinstance(content, str) else ""
    end = text.find(SUMMARY_END)
    rest = text[end + len(SUMMARY_END):] if end >= 0 else ""
    return {**message, "content": rest[2:]} if rest.startswith("\n\n") else None


def _fits(after: list[dict], s: int, host: dict, before: list[dict], fitted: bool) -> bool:
    """Whether `after`, with its summary-holding message `s` restored to `host`, is head + tail of `before`."""
    restored = after[:s] + [host] + after[s + 1:]
    return any(_head_matches(restored[:h], before[:h], fitted)
               and _tail_matches(restored[h:], before[len(before) - len(restored) + h:], fitted)
               for h in range(s, -1, -1))


def problems(before: list[dict], after: list[dict], fitted: bool = True) -> list[str]:
    """Everything wrong with `after` as a compaction of `before` (empty when valid).

    Role clashes inside the verbatim head or tail were in the input and are not
    ours to fix; a clash next to the summary is. `fitted`: head and tail may hold
    what the fit step changes (cleared or shortened tool outputs, shortened
    arguments); else only an oversized tail's demoted outputs.
    """
    found = [f"pairing: {p}" for p in pairing_problems(after)]
    summaries = [i for i, m in enumerate(after) if is_summary_message(m)]
    if not summaries:
        if len(after) != len(before) or not all(_same(without_note(a), without_note(b), fitted, len(after) - i)
                                                for i, (a, b) in enumerate(zip(after, before))):
            found.append("no summary, yet the messages changed")
        return found
    s = summaries[-1]
    host = _unmerged(normalize(after[s]))
    if host is not None and host["content"] == "" and not _fits(after, s, host, before, fitted):
        host = {**host, "content": None}   # merged into a message that had no content at all
    if host is not None:      # the summary opens a tail message (no role fitted between head and tail)
        if not _fits(after, s, host, before, fitted):
            found.append("head and tail (around the merged summary) are not the input's messages")
    elif not _head_matches(after[:s], before[:s], fitted):
        found.append("head is not the input's first messages")
    tail = after[s + 1:]
    if host is None and not tail:
        found.append("empty tail")
    elif host is None and not _tail_matches(tail, before[len(before) - len(tail):], fitted):
        found.append("tail is not the input's last messages")
    visible = [i for i, m in enumerate(after) if visible_role(m) in ("user", "assistant")]
    for a, b in zip(visible, visible[1:]):
        # a merged summary sits in a tail message: only the step into it is ours (the rest is the input's)
        if after[a]["role"] == after[b]["role"] and (a < s <= b if host is not None else a <= s <= b):
            found.append(f"role rule: messages {a}/{b} share the role {after[a]['role']} next to the summary")
    if not any(m.get("role") == "user" for m in after):
        found.append("no user message left")
    return found


def contains(messages: list[dict], needle: str) -> bool:
    return any(needle in text_of(m.get("content")) or needle in str(m.get("tool_calls") or "")
               for m in messages)
