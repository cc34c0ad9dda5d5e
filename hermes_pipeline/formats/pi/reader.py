"""pi coding agent session logs (badlogic/pi-mono, `~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`), read-only.

The shape (pi-mono `packages/coding-agent/docs/session.md` and
`src/core/session-manager.ts`, session version 3; versions 1-2 read too):
- line 1 is a header `{"type": "session", "version": 3, "id": <uuid>, "cwd": ...}`;
- every other line is an entry `{"type": ..., "id": <8 hex>, "parentId": <id> | null,
  "timestamp": ...}` (version 1 entries have no ids: the log is linear);
  `message` entries carry an AgentMessage in `message`:
  `user` (content string or text/image blocks), `assistant` (text / thinking /
  `toolCall {id, name, arguments}` blocks, usage, stopReason), `toolResult`
  (`toolCallId`, `toolName`, content blocks, `isError`), `bashExecution`
  (a `!command` the user ran), `custom` (`hookMessage` before v3),
  `branchSummary`, `compactionSummary`;
- `compaction` entries (`summary`, `firstKeptEntryId`), `branch_summary`,
  `custom_message` (extension text sent to the model) take part in the context;
  `model_change`, `thinking_level_change`, `custom`, `label`, `session_info`
  don't.

The conversation is what pi itself would send to the model
(`buildSessionContext`): the path from the last entry back to the root
(abandoned branches are left out, counted), and after a compaction entry its
summary, then the entries from `firstKeptEntryId` on. The summary becomes a
message starting with `SUMMARY_PREFIX`, so a later compaction updates it. A
parent that is not in the log (a broken line) is bridged to the line before.
Messages are turned into Anthropic messages (images as base64 sources,
`toolCall` as `tool_use`, tool results as `tool_result` blocks of one user
message) and from there into OpenAI messages; the output is Anthropic, one
conversation per line. Entries outside the context go to the metadata.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.anthropic import message_to_openai
from hermes_pipeline.formats.base import MESSAGE, TranscriptFormat, checked, file_conversation_id
from hermes_pipeline.formats.native import NativeLog, lines_as_read, require_native
from hermes_pipeline.formats.pi.entries import anthropic_block, branch_path, millis
from hermes_pipeline.formats.pi.writer import write_session
from hermes_pipeline.inputs.jsonl import Record, Rejected
from hermes_pipeline.transcript import SUMMARY_PREFIX, Conversation
from hermes_pipeline.usage import context_tokens

MESSAGE_ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage",
                 "branchSummary", "compactionSummary")
CONTEXT_ENTRIES = ("message", "compaction", "branch_summary", "custom_message")
ENTRY_TYPES = CONTEXT_ENTRIES + ("model_change", "thinking_level_change", "custom", "label", "session_info")
FAILED_STOPS = ("error", "aborted")
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n"


# -- validation -------------------------------------------------------------------

def _blocks_problem(content: Any, where: str, kinds: tuple[str, ...], allow_string: bool) -> str | None:
    if isinstance(content, str) and allow_string:
        return None
    if not isinstance(content, list):
        expected = "string or list of content blocks" if allow_string else "list of content blocks"
        return f"{where} content is a {type(content).__name__} (expected {expected})"
    for j, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") not in kinds:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            return f"{where} block {j} ({kind!r}) is not one of {', '.join(kinds)}"
        problem = _block_problem(block, f"{where} block {j}")
        if problem:
            return problem
    return None


def _block_problem(block: dict, where: str) -> str | None:
    kind = block["type"]
    if kind == "text" and not isinstance(block.get("text"), str):
        return f"{where} is a text block without a string 'text'"
    if kind == "thinking" and not isinstance(block.get("thinking"), str):
        return f"{where} is a thinking block without a string 'thinking'"
    if kind == "image" and not (isinstance(block.get("data"), str) and isinstance(block.get("mimeType"), str)):
        return f"{where} is an image block without string 'data' and 'mimeType'"
    if kind == "toolCall" and not (isinstance(block.get("id"), str) and isinstance(block.get("name"), str)
                                   and isinstance(block.get("arguments", {}), dict)):
        return f"{where} is a toolCall without a string id, a string name and object arguments"
    return None


def message_problem(message: Any, where: str = "message") -> str | None:
    """Why an entry's `message` is not a pi AgentMessage we can read, or None."""
    if not isinstance(message, dict):
        return f"{where} is a {type(message).__name__}, not an object"
    role = message.get("role")
    if role not in MESSAGE_ROLES:
        return f"{where} role {role!r} is not one of {', '.join(MESSAGE_ROLES)}"
    content = message.get("content")
    if role == "user" or role in ("custom", "hookMessage"):
        return _blocks_problem(content, where, ("text", "image"), allow_string=True)
    if role == "assistant":
        return _blocks_problem(content, where, ("text", "thinking", "toolCall"), allow_string=False)
    if role == "toolResult":
        if not isinstance(message.get("toolCallId"), str):
            return f"{where} is a toolResult without a string toolCallId"
        return _blocks_problem(content, where, ("text", "image"), allow_string=True)
    if role == "bashExecution":
        if not isinstance(message.get("command"), str):
            return f"{where} is a bashExecution without a string command"
        output = message.get("output")
        return None if output is None or isinstance(output, str) else f"{where} bashExecution output is not a string"
    if not isinstance(message.get("summary"), str):
        return f"{where} is a {role} without a string summary"
    return None


def entry_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"record is a {type(value).__name__}, not a pi session entry"
    kind = value.get("type")
    if not isinstance(kind, str):
        return "record has no string 'type': not a pi session entry"
    if kind == "session":
        return None
    if kind not in ENTRY_TYPES:
        return None      # an entry type from a newer pi: kept in the metadata
    for key in ("id", "parentId"):
        if key in value and value[key] is not None and not isinstance(value[key], str):
            return f"{kind} entry {key} is a {type(value[key]).__name__}, not a string"
    if kind == "message":
        return message_problem(value.get("message"), "message entry message")
    if kind in ("compaction", "branch_summary") and not isinstance(value.get("summary"), str):
        return f"{kind} entry has no string 'summary'"
    if kind == "custom_message":
        return _blocks_problem(value.get("content"), "custom_message entry", ("text", "image"), allow_string=True)
    return None


# -- the context: which entries pi would send -----------------------------------------

def _first_kept(path: list[Record], at: int, file_records: list[Record]) -> int:
    """Where the entries the compaction at `at` kept start on the path (`at`: none), as pi finds them.

    Version 1 logs name the first kept entry by its index among the file's entries, the header
    included (`firstKeptEntryIndex`); pi's migration turns that into the entry's id, and keeps
    nothing when it is the header or out of range.
    """
    compaction = path[at].value
    first = compaction.get("firstKeptEntryId")
    if isinstance(first, str):
        return next((k for k in range(at) if path[k].value.get("id") == first), at)
    index = compaction.get("firstKeptEntryIndex")
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(file_records) \
            and file_records[index].value.get("type") != "session":
        return next((k for k in range(at) if path[k] is file_records[index]), at)
    return at


def context_entries(path: list[Record], stats: dict[str, int], file_records: list[Record] = ()) -> list[Record]:
    """pi's buildSessionContext: the latest compaction's summary, then what it kept, then what followed."""
    compactions = [k for k, e in enumerate(path) if e.value["type"] == "compaction"]
    if not compactions:
        return [e for e in path if e.value["type"] in CONTEXT_ENTRIES]
    at = compactions[-1]
    start = _first_kept(path, at, list(file_records))
    before = [e for e in path[:at] if e.value["type"] in CONTEXT_ENTRIES]
    kept = [e for e in path[start:at] if e.value["type"] in CONTEXT_ENTRIES and e.value["type"] != "compaction"]
    stats["compacted_entries"] = len(before) - len(kept)
    after = [e for e in path[at + 1:] if e.value["type"] in CONTEXT_ENTRIES]
    return [path[at]] + kept + after


def _before_compaction(message: dict, used: list[Record]) -> bool:
    """An assistant message no later than the compaction the context starts with: its usage describes
    the context before that compaction (pi ignores it for the same reason)."""
    if not used or used[0].value["type"] != "compaction":
        return False
    at, sent = millis(used[0].value.get("timestamp")), message.get("timestamp")
    return at is not None and isinstance(sent, (int, float)) and sent <= at


# -- pi messages -> Anthropic messages --------------------------------------------------

def _content(content: str | list) -> str | list[dict]:
    return content if isinstance(content, str) else [anthropic_block(b) for b in content]


def bash_text(message: dict) -> str:
    """A user's `!command` as pi shows it to the model (bashExecutionToText)."""
    output = message.get("output") or ""
    text = f"Ran `{message['command']}`\n" + (f"```\n{output}\n```" if output else "(no output)")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(message.get("exitCode"), int) and message["exitCode"] != 0:
        text += f"\n\nCommand exited with code {message['exitCode']}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _as_blocks(content: str | list) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return content


class _Turns:
    """Anthropic messages; consecutive user pieces (results, text) merge into one message.
    `sources` holds, per message, the entries it was made of (their indices among the file's records)."""

    def __init__(self, index_of: dict[int, int]):
        self.messages: list[dict] = []
        self.sources: list[list[int]] = []
        self.lines: list[int] = []      # the input line each message starts on
        self.open_user = False          # the last message is a user message more may join
        self.index_of, self.entry = index_of, -1
        self.line_no = 0                # the line of the entry being read

    def assistant(self, content: list[dict]) -> None:
        self.messages.append({"role": "assistant", "content": content})
        self.sources.append([self.entry])
        self.lines.append(self.line_no)
        self.open_user = False

    def user(self, content: str | list, closed: bool = False) -> None:
        if self.open_user and not closed:
            last = self.messages[-1]
            last["content"] = _as_blocks(last["content"]) + _as_blocks(content)
            self.sources[-1].append(self.entry)
        else:
            self.messages.append({"role": "user", "content": content})
            self.sources.append([self.entry])
            self.lines.append(self.line_no)
        self.open_user = not closed


def to_anthropic(entries: list[Record], stats: dict[str, int], notes: list[str],
                 turns: _Turns | None = None) -> _Turns:
    turns = turns or _Turns({})
    for record in entries:
        turns.entry = turns.index_of.get(id(record), -1)
        entry = record.value
        turns.line_no = record.line_no
        kind = entry["type"]
        if kind == "compaction":
            turns.user(f"{SUMMARY_PREFIX}\n{entry['summary']}", closed=True)
            continue
        if kind == "branch_summary":
            turns.user(f"{BRANCH_PREFIX}<summary>\n{entry['summary']}\n</summary>")
            continue
        if kind == "custom_message":
            turns.user(_content(entry["content"]))
            continue
        message = entry["message"]
        role = message["role"]
        if role == "assistant":
            content = [anthropic_block(b) for b in message["content"]]
            if not content and message.get("stopReason") in FAILED_STOPS:
                stats["failed_turns_dropped"] = stats.get("failed_turns_dropped", 0) + 1
                notes.append(f"line {record.line_no}: dropped an empty {message['stopReason']} assistant turn "
                             f"({message.get('errorMessage') or 'no error message'})")
                continue
            turns.assistant(content)
        elif role == "toolResult":
            result = {"type": "tool_result", "tool_use_id": message["toolCallId"],
                      "content": _content(message.get("content", ""))}
            if message.get("isError") is True:
                result["is_error"] = True
            turns.user([result])
        elif role == "bashExecution":
            if message.get("excludeFromContext"):
                stats["bash_excluded"] = stats.get("bash_excluded", 0) + 1
                continue
            turns.user(bash_text(message))
        elif role == "compactionSummary":
            turns.user(f"{SUMMARY_PREFIX}\n{message['summary']}", closed=True)
        elif role == "branchSummary":
            turns.user(f"{BRANCH_PREFIX}<summary>\n{message['summary']}\n</summary>")
        else:                                   # user, custom, hookMessage
            turns.user(_content(message["content"]))
    return turns


# -- the format -----------------------------------------------------------------------------

class PiFormat(TranscriptFormat):
    name = "pi"
    write_as = "anthropic"      # a conversation that is not a session of its own is written as this
    native = True               # a session read from a log is written back as a pi session

    def detect(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return None
        kind = value.get("type")
        if kind == "session" and isinstance(value.get("id"), str) and ("cwd" in value or "version" in value):
            return MESSAGE
        if kind == "message" and isinstance(value.get("message"), dict) \
                and value["message"].get("role") in MESSAGE_ROLES and ("parentId" in value or "timestamp" in value):
            return MESSAGE
        if kind in ENTRY_TYPES and "parentId" in value and "id" in value:
            return MESSAGE
        return None

    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        header, entries, extra_headers, notes, first, lines, rejected = None, [], [], [], None, [], []
        for item in checked(items, entry_problem):
            if isinstance(item, Rejected):
                rejected.append((item.line_no, item.raw))
                yield item
                continue
            first = first or item
            lines.append(item)
            notes.extend(f"line {item.line_no}: {r}" for r in item.repairs)
            if item.value["type"] != "session":
                entries.append(item)
            elif header is None:
                header = item.value
            else:
                extra_headers.append(item.value)
        if first is not None:
            yield self._conversation(header, entries, path, first.source, notes, extra_headers, lines, rejected)

    def _conversation(self, header: dict | None, entries: list[Record], path: str, source: str,
                      notes: list[str], extra_headers: list[dict], lines: list,
                      rejected: list[tuple[int, bytes]]) -> Conversation:
        stats = {"records": len(entries) + len(extra_headers) + (header is not None), "entries": len(entries)}
        on_path = branch_path(entries, notes)
        used = context_entries(on_path, stats, lines)
        turns = to_anthropic(used, stats, notes, _Turns({id(r): i for i, r in enumerate(lines)}))
        messages, message_lines = [], []
        for index, (message, line_no) in enumerate(zip(turns.messages, turns.lines)):
            pieces = message_to_openai(message, index)
            messages.extend(pieces)
            message_lines.extend([line_no] * len(pieces))
        stats["entries_used"] = len(used)
        stats["off_path_entries"] = len(entries) - len(on_path)
        assistants = [e.value["message"] for e in used
                      if e.value["type"] == "message" and e.value["message"]["role"] == "assistant"]
        usage = next((m["usage"] for m in reversed(assistants) if isinstance(m.get("usage"), dict)
                      and not _before_compaction(m, used)), None)
        session = header.get("id") if header else None
        conversation_id = session if isinstance(session, str) and session else file_conversation_id(path)
        metadata: dict[str, Any] = {"source_format": self.name, "session_id": session}
        if header:
            metadata["cwd"] = header.get("cwd")
            metadata["header"] = header
        if assistants:
            for key in ("provider", "model", "api"):
                if key in assistants[-1]:
                    metadata[key] = assistants[-1][key]
        if usage is not None:
            metadata["usage"] = usage
        metadata["events"] = extra_headers + [e.value for e in entries if e.value["type"] not in CONTEXT_ENTRIES]
        metadata["stats"] = stats
        return Conversation(
            id=conversation_id, messages=messages, source=source, format=self.name, layout=MESSAGE,
            record={"id": conversation_id, "messages": [], "metadata": metadata},
            recorded_prompt_tokens=context_tokens(usage), notes=notes, stats=stats,
            raw_records=[r.value for r in lines], message_lines=message_lines,
            native=NativeLog(lines, [tuple(t) for t in turns.sources], rejected),
        )

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        return lines_as_read(conversation)

    def write_compacted(self, conversation: Conversation, compaction: Any, layout: str, options: Any) -> Any:
        require_native(self.name, conversation)
        return write_session(conversation, compaction, options)
