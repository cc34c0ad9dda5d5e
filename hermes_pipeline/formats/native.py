"""The seam between a compaction and a writer of an agent's own session format.

A native writer (Claude Code, pi, Hermes' store) gets the conversation as read
(its `native` NativeLog: every input line, and which lines each source message
came from) and the engine's Compaction, and writes the session the way the agent
compacts itself. It needs to know which output messages are the kept head, which
the summary, which the kept tail, and where each kept message came from. That is
read from the output itself, so any engine that returns messages will do:
- the summary is the message holding the outcome's summary text (or, when the
  engine merged it into the first tail message, that block of it);
- a kept message carries the private round-trip mark its reader gave it
  (formats/roundtrip.py): the number of its source message, even when the
  engine changed its content; a message without one was made by the engine.
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

from hermes_pipeline.formats.anthropic import KEY, AnthropicFormat
from hermes_pipeline.formats.base import CONVERSATION
from hermes_pipeline.formats.roundtrip import kept_if_unchanged, private
from hermes_pipeline.inputs.jsonl import Record, Verbatim
from hermes_pipeline.transcript import SUMMARY_END, strip_cache_control, text_of


@dataclass
class NativeLog:
    """A session log as read: its lines, and which of them each source message came from."""
    records: list[Record]                       # every parsed line, in file order
    sources: list[tuple[int, ...]] = field(default_factory=list)   # per source message: indices into records
    rejected: list[tuple[int, bytes]] = field(default_factory=list)   # (line number, bytes) of lines set aside

    def every_line(self) -> list:
        """Every input line as it was, in file order: the parsed ones and the ones set aside (the agent
        skips those as it did before); a line too long to hold is only in the quarantine."""
        lines = [(r.line_no, verbatim(r)) for r in self.records]
        lines += [(n, Verbatim(raw[:-1] if raw.endswith(b"\n") else raw)) for n, raw in self.rejected if raw]
        return [line for _, line in sorted(lines, key=lambda pair: pair[0])]

    def every_line_no(self) -> list[int]:
        return sorted([r.line_no for r in self.records] + [n for n, raw in self.rejected if raw])

    def lines_of(self, message: dict) -> tuple[int, ...]:
        """The input lines a kept message came from (none for one the engine made)."""
        mark = private(message, KEY)
        number = mark.get("g") if mark else None
        return self.sources[number] if isinstance(number, int) and 0 <= number < len(self.sources) else ()


@dataclass
class Parts:
    """A compacted conversation cut where the agent's own compaction cuts it."""
    head: list[dict]
    summary: str | None          # the summary message's text as the engine wrote it (None: no summary)
    sections: str | None         # the summary's sections alone (outcome.summary.text)
    tail: list[dict]


def _unmerged(message: dict, sections: str) -> tuple[dict, str] | None:
    """(the message without the summary block the engine put at its start, that block), or None."""
    content = message.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict) \
            and sections in str(content[0].get("text", "")):
        return {**message, "content": content[1:]}, content[0]["text"]
    if isinstance(content, str) and sections in content and SUMMARY_END in content:
        end = content.index(SUMMARY_END) + len(SUMMARY_END)
        return {**message, "content": content[end:].lstrip("\n")}, content[:end]
    return None


def unmarked(message: dict) -> dict:
    """The message without the prompt-cache markers the engine's last stage adds: an agent sets its own,
    and a kept message should still read as unchanged (a text marked was a plain string)."""
    (clean,) = strip_cache_control([message])
    content = clean.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and set(content[0]) == {"type", "text"} and content[0]["type"] == "text":
        as_text = {**clean, "content": content[0]["text"]}
        if kept_if_unchanged(as_text, KEY)[0]:
            return as_text
    return clean


def split_output(messages: list[dict], outcome: Any) -> Parts:
    """Head, summary and tail of an engine's output (all of it is tail when there is no summary),
    without prompt-cache markers."""
    messages = [unmarked(m) for m in messages]
    sections = outcome.summary.text if getattr(outcome, "summary", None) is not None else None
    if not sections:
        return Parts([], None, None, list(messages))
    probe = sections.strip()[:200]
    for index, message in enumerate(messages):
        text = text_of(message.get("content"))
        if probe not in text:
            continue
        if private(message, KEY) is None:
            return Parts(list(messages[:index]), text, sections, list(messages[index + 1:]))
        found = _unmerged(message, probe)
        if found is not None:
            rest, block = found
            out = [*messages[:index], rest, *messages[index + 1:]]
            cut = _gap(out[:index + 1])
            return Parts(out[:cut], block, sections, out[cut:])
    return Parts([], None, None, list(messages))


def _gap(messages: list[dict]) -> int:
    """Where the removed middle was: the first place the source message numbers skip some (the engine put
    the summary into the first tail message with text, which may come after the tail's first messages)."""
    numbers = [(private(m, KEY) or {}).get("g") for m in messages]
    for index in range(1, len(numbers)):
        before, after = numbers[index - 1], numbers[index]
        if isinstance(before, int) and isinstance(after, int) and after > before + 1:
            return index
    return len(messages) - 1


def require_native(format_name: str, conversation: Any) -> None:
    """A session is written in its agent's format only when it was read from that agent's log."""
    if conversation.native is None or conversation.format != format_name:
        raise ValueError(f"output.format={format_name} writes {format_name} sessions read from {format_name} "
                         f"logs; this conversation is {conversation.format} (give output.format=same or a "
                         "conversation format: openai, anthropic, sharegpt)")


def lines_as_read(conversation: Any) -> Iterator[Any]:
    """An agent's session unchanged: its lines as they were; a conversation read from elsewhere: the
    Anthropic record (an agent's log format has no other shape for it)."""
    if conversation.native is not None:
        yield from conversation.native.every_line()
        return
    yield from AnthropicFormat().write(conversation, CONVERSATION)


def verbatim(record: Record) -> Verbatim:
    return Verbatim(record.line)


def stable_uuid(*parts: Any) -> str:
    """A uuid that is the same for the same input and compaction: outputs stay byte-identical run to run."""
    name = ":".join(map(str, parts)).encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "hermes-pipeline:" + name))      # real logs hold lone surrogates


def stable_hex(length: int, *parts: Any) -> str:
    return hashlib.blake2b(":".join(map(str, parts)).encode("utf-8", "surrogatepass"),
                           digest_size=16).hexdigest()[:length]


def line_ranges(numbers: list[int]) -> str:
    """Line numbers as ranges: [1, 2, 3, 7] -> "1-3,7"."""
    out, start, previous = [], None, None
    for n in sorted(numbers):
        if start is None:
            start = previous = n
        elif n == previous + 1:
            previous = n
        else:
            out.append(f"{start}-{previous}" if previous > start else str(start))
            start = previous = n
    if start is not None:
        out.append(f"{start}-{previous}" if previous > start else str(start))
    return ",".join(out)


def history_row(log: NativeLog, history: str, kept: list[int], rewritten: list[int], added: int) -> dict:
    """The manifest's account of a native output: which input lines are in it as they were, which
    were rewritten (their message carried in a new line), which were removed, and how many of its
    lines are not input lines as they were (`added`)."""
    every = log.every_line_no()
    kept_set, rewritten_set = set(kept), set(rewritten)
    removed = [n for n in every if n not in kept_set and n not in rewritten_set]
    return {"history": history, "lines_in": len(every), "lines_kept": line_ranges(kept),
            "lines_rewritten": line_ranges(rewritten), "lines_removed": line_ranges(removed),
            "lines_added": added}
