"""Checks every compacted transcript must pass; shared by the tests."""
from __future__ import annotations

import json

from hermes_pipeline.stages.prune import KEPT_ERRORS_LABEL, PRUNED_TOOL_OUTPUT, SHORTENED_MARK
from hermes_pipeline.transcript import (
    COMPACTION_NOTE,
    SUMMARY_END,
    is_summary_message,
    pairing_problems,
    text_of,
    tool_calls,
    unmarked,
    visible_role,
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
    """A head or tail message as the fit step may leave it (engine/context_fit.py): a tool output cleared, or shortened
    to its own start and end around a marker; long tool-call arguments shortened, the calls the same and their
    arguments still valid JSON. A user message never."""
    if kept.get("role") == "tool" and source.get("role") == "tool":
        text = kept.get("content")
        if {**kept, "content": None} != {**source, "content": None} or not isinstance(text, str):
            return False
        if cleared(text, source):
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
    tail demotes (the last 3 messages stay as they are)."""
    kept, source = normalize(kept), normalize(source)
    if kept == source:
        return True
    if fitted:
        return changed_by_fit(kept, source)
    return from_end > 3 and kept.get("role") == "tool" and cleared(kept.get("content"), source) \
        and {**kept, "content": None} == {**source, "content": None}


def cleared(text, source: dict) -> bool:
    """A cleared tool output: the marker, then (prune.cleared_tool_output) error lines of the source's own."""
    if text == PRUNED_TOOL_OUTPUT:
        return True
    marker, _, kept = text.partition("\n") if isinstance(text, str) else ("", "", "")
    lines = kept.split("\n")
    original = text_of(source.get("content"))
    return marker == PRUNED_TOOL_OUTPUT and lines[0] == KEPT_ERRORS_LABEL and len(lines) > 1 \
        and all(line and line.removesuffix("…") in original for line in lines[1:])   # clip_verbatim may end it so


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


def problems(before: list[dict], after: list[dict], fitted: bool = True, users_combined: bool = False) -> list[str]:
    """Everything wrong with `after` as a compaction of `before` (empty when valid).

    Role clashes inside the verbatim head or tail were in the input and are not
    ours to fix; a clash next to the summary is, except two user turns when the
    agent that reads them combines consecutive user turns into one (`users_combined`:
    Claude Code and pi sessions, whose compaction summary is always a user turn).
    `fitted`: head and tail may hold what the fit step changes (cleared or shortened
    tool outputs, shortened arguments); else only an oversized tail's demoted outputs.
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
        if users_combined and after[a]["role"] == "user":
            continue
        if after[a]["role"] == after[b]["role"] and (a < s <= b if host is not None else a <= s <= b):
            found.append(f"role rule: messages {a}/{b} share the role {after[a]['role']} next to the summary")
    if not any(m.get("role") == "user" for m in after):
        found.append("no user message left")
    return found


def summary_first_problems(before: list[dict], after: list[dict]) -> list[str]:
    """problems() of a pi session read back: pi sends its compaction summary first, then the kept messages
    (our head, then our tail); valid when putting the summary back after some head makes a valid compaction."""
    if not after or not is_summary_message(after[0]):
        return ["the summary does not come first"]
    found = []
    for head in range(len(after)):
        found = problems(before, after[1:head + 1] + after[:1] + after[head + 1:], users_combined=True)
        if not found:
            return []
    return found


def written_problems(format_name: str, before: list[dict], after: list[dict]) -> list[str]:
    """problems() of a conversation read back from what was written in `format_name`: a Claude Code session
    combines consecutive user turns, a pi session sends its summary first."""
    found = problems(before, after, users_combined=format_name in ("claude-code", "pi"))
    if found and format_name == "pi":
        return summary_first_problems(before, after) and found
    return found


def our_summary(format_name: str, messages: list[dict]) -> dict:
    """The summary this run wrote, among the read-back messages (an earlier one may be in the head)."""
    summaries = [m for m in messages if is_summary_message(m)]
    return summaries[0] if format_name == "pi" else summaries[-1]


def contains(messages: list[dict], needle: str) -> bool:
    return any(needle in text_of(m.get("content")) or needle in str(m.get("tool_calls") or "")
               for m in messages)
