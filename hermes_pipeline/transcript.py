"""The canonical in-memory conversation: OpenAI chat messages as plain dicts.

Every reader turns its format into this shape and every writer turns it back,
so the stages only ever see one message model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

SUMMARY_PREFIX = "[CONTEXT COMPACTION]"
SUMMARY_END = "[End of context summary — respond to the message below, not to this summary.]"
COMPACTION_NOTE = (
    "[Note: earlier turns of this conversation were compacted into a summary "
    "to save context space.]"
)


@dataclass
class Conversation:
    id: str
    messages: list[dict]
    source: str                      # "file:line" of the record it came from
    format: str = "openai"
    layout: str = "conversation"     # "conversation" (one per line) or "message" (one message per line)
    record: dict | None = None       # the original record, for carrying other fields through
    recorded_prompt_tokens: int | None = None   # API-reported usage found in the transcript
    notes: list[str] = field(default_factory=list)   # repairs made while reading
    stats: dict[str, int] = field(default_factory=dict)   # counted while reading (e.g. duplicates dropped)
    digest: str = ""                 # of the input line it was read from (one-conversation-per-line files)
    # one conversation per file: the JSON value of each input line it was read from, in file order
    # (a lossless engine keeps them; one conversation per line has its line's value in `record`)
    raw_records: list | None = None
    # one conversation per file: the input line each message starts on (None: the line in `source`)
    message_lines: list[int] | None = None
    # one conversation per line (or JSON document element): its bytes as read (an unchanged conversation is
    # written as them)
    raw_line: bytes | None = None
    # one conversation per file: the bytes of each record it was read from (an unchanged one is written as them)
    records_as_read: list[bytes] | None = None
    # what a native writer needs to write it back in its agent's own format (formats/native.py NativeLog)
    native: Any = None


# Content part types that carry an image (OpenAI chat, Anthropic, OpenAI responses).
IMAGE_PART_TYPES = ("image_url", "image", "input_image")


def is_image_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in IMAGE_PART_TYPES


def role(message: dict) -> str:
    return message.get("role", "")


def tool_calls(message: dict) -> list[dict]:
    calls = message.get("tool_calls")
    return calls if isinstance(calls, list) else []


def is_tool_result(message: dict) -> bool:
    return role(message) == "tool"


def text_of(content: Any) -> str:
    """All text in a message content (string, list of parts, or None)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return str(content)


def message_text(message: dict) -> str:
    return text_of(message.get("content"))


def visible_role(message: dict) -> str | None:
    """The role a chat template shows, or None for rows it skips.

    Tool rows and assistant rows that only carry tool calls don't count when
    checking that user and assistant turns alternate.
    """
    r = role(message)
    if r == "tool":
        return None
    if r == "assistant" and tool_calls(message) and not message_text(message).strip():
        return None
    return r


# A command the user ran, and its output, in a user turn: pi's `!cmd` (bashExecution: "Ran `cmd`", the output
# fenced), Claude Code's bash mode (<bash-input>, <bash-stdout>, <bash-stderr>). Its output is output, as a
# tool's is: pruned and shortened like one; what the user typed (the command) is theirs.
_PI_COMMAND = re.compile(r"\A(Ran `[^\n]*`\n```\n)(.*)(\n```(?:\n\n.*)?)\Z", re.S)
_BASH_MODE = re.compile(r"\A(\s*(?:<bash-input>.*?</bash-input>\s*)?<bash-stdout>)(.*?)(</bash-stdout>\s*"
                        r"(?:<bash-stderr>.*?</bash-stderr>\s*)?)\Z", re.S)


def command_run(message: dict) -> tuple[str, str, str] | None:
    """(the command's framing before its output, the output, the framing after it) of a user message that is
    a command the user ran; None for any other message."""
    if message.get("role") != "user":
        return None
    text = message_text(message)
    found = (_PI_COMMAND.match(text) if text.startswith("Ran `") else
             _BASH_MODE.match(text) if "<bash-stdout>" in text else None)
    return found.groups() if found else None


def with_command_output(message: dict, output: str) -> dict:
    """A command run (command_run) with another output: the command and its framing as they were."""
    before, _, after = command_run(message)
    return {**message, "content": before + output + after}


# An earlier compaction summary: ours and Claude Code's or pi's as read ("[CONTEXT COMPACTION]"), the Hermes
# agent's ("[CONTEXT COMPACTION — REFERENCE ONLY] ...") and its trajectory compressor's ("[CONTEXT SUMMARY]:")
EARLIER_SUMMARY = re.compile(r"\[CONTEXT (?:COMPACTION\b[^\]\n]*\]|SUMMARY\]:)")


def is_summary_message(message: dict) -> bool:
    return EARLIER_SUMMARY.search(message_text(message)[:400]) is not None


def same_role_neighbours(messages: list[dict]) -> list[int]:
    """Indexes i where visible user/assistant turns i-1 and i share a role."""
    bad = []
    previous = None
    for i, message in enumerate(messages):
        r = visible_role(message)
        if r not in ("user", "assistant"):
            if r is not None:
                previous = None
            continue
        if previous is not None and previous[1] == r:
            bad.append(i)
        previous = (i, r)
    return bad


@dataclass
class Turn:
    """One message and the tool rows right after it, results paired with its calls.

    Results pair with the calls of the assistant message just before their run
    of tool rows, by position: ids are not unique in real data.
    """
    index: int                      # position of `message` (of the first row when message is None)
    message: dict | None            # None: tool rows with no message before them
    rows: list[dict]                # the tool rows that follow, in order
    matched: list[bool]             # per row: it answers one of the message's calls
    answers: list[dict | None]      # per call of the message: the row answering it

    @property
    def calls(self) -> list[dict]:
        return tool_calls(self.message) if self.message is not None and role(self.message) == "assistant" else []

    @property
    def unanswered(self) -> list[dict]:
        return [call for call, row in zip(self.calls, self.answers) if row is None]


def turns(messages: list[dict], start: int = 0) -> Iterator[Turn]:
    """The one walk over tool pairing (from `start`); repair, assembly, checks and probes all use it."""
    i, n = start, len(messages)
    while i < n:
        index = i
        message = None if is_tool_result(messages[i]) else messages[i]
        if message is not None:
            i += 1
        rows = []
        while i < n and is_tool_result(messages[i]):
            rows.append(messages[i])
            i += 1
        turn = Turn(index, message, rows, [], [])
        calls = turn.calls
        turn.answers = [None] * len(calls)
        for row in rows:
            k = next((k for k, call in enumerate(calls)
                      if turn.answers[k] is None and call.get("id") == row.get("tool_call_id")), None)
            turn.matched.append(k is not None)
            if k is not None:
                turn.answers[k] = row
        yield turn


def pairing_problems(messages: list[dict]) -> list[str]:
    """Tool calls without a result and results without a call, paired by position."""
    problems = []
    for turn in turns(messages):
        for j, (row, matched) in enumerate(zip(turn.rows, turn.matched)):
            position = turn.index + j + (turn.message is not None)
            if turn.message is None:
                problems.append(f"message {position}: tool result without a preceding call")
            elif not matched:
                problems.append(f"message {position}: tool result {row.get('tool_call_id')!r} has no call")
        for call in turn.unanswered:
            problems.append(f"message {turn.index}: tool call {call.get('id')!r} has no result")
    return problems


# -- cache markers (stages/cache_mark.py adds them; readers and checks look past them) ----------

def strip_cache_control(messages: list[dict]) -> list[dict]:
    """Copies of the messages without any cache_control marker."""
    stripped = []
    for message in messages:
        message = {k: v for k, v in message.items() if k != "cache_control"}
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = [
                {k: v for k, v in part.items() if k != "cache_control"} if isinstance(part, dict) else part
                for part in content
            ]
        stripped.append(message)
    return stripped


def unmarked(message: dict) -> dict:
    """A copy of one message as it was before cache marking (stages/cache_mark.py): no markers, and a string
    content the marking wrapped in a text block unwrapped."""
    message = strip_cache_control([message])[0]
    content = message.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and set(content[0]) == {"type", "text"} and content[0]["type"] == "text":
        message["content"] = content[0]["text"]
    return message
