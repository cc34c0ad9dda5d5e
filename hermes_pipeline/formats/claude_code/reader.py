"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`), read-only.

One event per line; the file is one conversation. The conversation is the
chain of events (`parentUuid` links) that ends at the last user/assistant
event, so rewound branches and what came before a compaction boundary are
left out; sub-agent lines (`isSidechain`) are left out too, unless the file
is a sub-agent's own log. Parallel tool results hang off the chain in newer
versions and are taken back in. One model response written over several
lines (same `message.id`) becomes one assistant message, consecutive user
lines one user message, and a Claude Code compaction summary a message that
starts with `SUMMARY_PREFIX`. `toolUseResult`, a structured copy of a tool
result, is dropped and its size counted. Other events go to the metadata.
Output is Anthropic, one conversation per line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.anthropic import message_problem, message_to_openai
from hermes_pipeline.formats.base import MESSAGE, TranscriptFormat, checked, file_conversation_id
from hermes_pipeline.formats.claude_code.writer import write_session
from hermes_pipeline.formats.native import NativeLog, lines_as_read, require_native
from hermes_pipeline.inputs.jsonl import Record, Rejected, dumps
from hermes_pipeline.transcript import SUMMARY_PREFIX, Conversation, is_summary_message, text_of
from hermes_pipeline.usage import context_tokens

TALK = ("user", "assistant")
SESSION_FIELDS = ("cwd", "version", "gitBranch", "slug", "userType")


def event_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return f"record is a {type(value).__name__}, not a Claude Code event"
    kind = value.get("type")
    if not isinstance(kind, str):
        return "record has no string 'type': not a Claude Code event"
    if kind in TALK:
        problem = message_problem(value.get("message"), f"{kind} event message")
        if problem:
            return problem
        if value["message"]["role"] != kind:
            return f"{kind} event carries a {value['message']['role']} message"
    return None


def _is_tool_results(event: dict) -> bool:
    content = event["message"]["content"]
    return event["type"] == "user" and isinstance(content, list) and bool(content) \
        and all(b.get("type") == "tool_result" for b in content)


def _starts_after_compaction(event: dict) -> bool:
    return event.get("isCompactSummary") is True or (
        event.get("type") == "system" and event.get("subtype") == "compact_boundary")


def _chain(events: list[Record], notes: list[str]) -> list[Record]:
    """The user/assistant events on the path to the last one, in file order.

    The walk follows parentUuid back to a compaction boundary or the first
    message; a parent that is not in the log (a broken line) or a chain that
    starts again mid-file is bridged to the line before, so nothing is lost.
    """
    talk = [i for i, e in enumerate(events) if e.value["type"] in TALK]
    if not talk:
        return []
    position = {e.value["uuid"]: i for i, e in enumerate(events) if isinstance(e.value.get("uuid"), str)}
    chosen, bridged, i = set(), 0, talk[-1]
    while i is not None:
        chosen.add(i)
        event = events[i].value
        parent = event.get("parentUuid")
        j = position.get(parent) if isinstance(parent, str) else None
        if j is None or j >= i:
            if parent is None and (_starts_after_compaction(event) or i <= talk[0]):
                break                               # the start, or a compaction boundary
            bridged += 1
            j = i - 1 if i > 0 else None
        i = j
    if bridged:
        notes.append(f"{bridged} line(s) had no parent line in the log; each was joined to the line before it")
    # parallel tool results (Claude Code 2.x) hang off the assistant line, beside the chain
    uuids = {events[i].value.get("uuid") for i in chosen if isinstance(events[i].value.get("uuid"), str)}
    for i in talk:
        parent = events[i].value.get("parentUuid")
        if i not in chosen and _is_tool_results(events[i].value) and isinstance(parent, str) and parent in uuids:
            chosen.add(i)
    return [events[i] for i in sorted(chosen) if events[i].value["type"] in TALK]


@dataclass
class _Turn:
    role: str
    blocks: list = field(default_factory=list)      # assistant blocks, or a user's non-result blocks
    results: list = field(default_factory=list)     # a user's tool_result blocks
    message_id: str | None = None
    text: str | None = None                         # the content when it is one line's string
    lines: int = 0
    closed: bool = False                            # nothing merges into it (a compaction summary)
    line_no: int = 0                                # the input line it starts on
    sources: list = field(default_factory=list)     # indices of its lines among the file's records

    def add(self, content: Any, source: int) -> None:
        self.sources.append(source)
        self.lines += 1
        if isinstance(content, str):
            self.text = content if self.lines == 1 else None
            if content:
                self.blocks.append({"type": "text", "text": content})
            return
        self.text = None
        for block in content:
            (self.results if block.get("type") == "tool_result" else self.blocks).append(block)

    @property
    def only_results(self) -> bool:
        return self.role == "user" and not self.blocks and self.text is None

    def message(self) -> dict:
        content = self.text if self.text is not None else self.results + self.blocks
        return {"role": self.role, "content": content}


def _merge(events: list[Record], index_of: dict[int, int] | None = None) -> list[_Turn]:
    """Turns of the chain's events; each knows its lines (indices among the file's records, `index_of`,
    else among `events`)."""
    turns: list[_Turn] = []
    for position, event in enumerate(events):
        value, message = event.value, event.value["message"]
        source = index_of[id(event)] if index_of is not None else position
        if value["type"] == "assistant":
            message_id = message.get("id")
            last = next((k for k in range(len(turns) - 1, -1, -1) if turns[k].role == "assistant"), None)
            same = last is not None and message_id and turns[last].message_id == message_id \
                and all(t.only_results for t in turns[last + 1:])
            if not same:
                turns.append(_Turn("assistant", message_id=message_id, line_no=event.line_no))
                last = len(turns) - 1
            turns[last].add(message["content"], source)
        elif value.get("isCompactSummary"):
            text = text_of(message["content"])
            if not is_summary_message({"content": text}):     # ours carries the prefix already
                text = f"{SUMMARY_PREFIX}\n{text}"
            turns.append(_Turn("user", text=text, lines=1, closed=True, sources=[source], line_no=event.line_no))
        else:
            if not turns or turns[-1].role != "user" or turns[-1].closed:
                turns.append(_Turn("user", line_no=event.line_no))
            turns[-1].add(message["content"], source)
    return turns


class ClaudeCodeFormat(TranscriptFormat):
    name = "claude-code"
    write_as = "anthropic"      # a conversation that is not a session of its own is written as this
    native = True               # a session read from a log is written back as a Claude Code session

    def detect(self, value: Any) -> str | None:
        if isinstance(value, dict) and isinstance(value.get("type"), str) and (
                "sessionId" in value or "leafUuid" in value or "parentUuid" in value
                or value["type"] == "file-history-snapshot"):
            return MESSAGE
        return None

    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        events, notes, rejected = [], [], []
        for item in checked(items, event_problem):
            if isinstance(item, Rejected):
                rejected.append((item.line_no, item.raw))
                yield item
                continue
            events.append(item)
            notes.extend(f"line {item.line_no}: {r}" for r in item.repairs)
        if events:
            yield self._conversation(events, path, notes, rejected)

    def _conversation(self, events: list[Record], path: str, notes: list[str],
                      rejected: list[tuple[int, bytes]]) -> Conversation:
        main = [e for e in events if not e.value.get("isSidechain")]
        sub_agent = not any(e.value["type"] in TALK for e in main) and any(e.value["type"] in TALK for e in events)
        used = _chain(events if sub_agent else main, notes)
        turns = _merge(used, {id(e): i for i, e in enumerate(events)})
        messages, lines = [], []
        for index, turn in enumerate(turns):
            pieces = message_to_openai(turn.message(), index)
            messages.extend(pieces)
            lines.extend([turn.line_no] * len(pieces))
        assistants = [e.value["message"] for e in used if e.value["type"] == "assistant"]
        usage = next((m["usage"] for m in reversed(assistants) if isinstance(m.get("usage"), dict)), None)
        stats = {
            "records": len(events),          # input lines this conversation was read from
            "events": len(events),
            "events_used": len(used),
            "assistant_lines_merged": len(assistants) - sum(t.role == "assistant" for t in turns),
            "sidechain_events": 0 if sub_agent else len(events) - len(main),
            "sidechain_bytes": 0 if sub_agent else sum(e.raw_size for e in events if e.value.get("isSidechain")),
            "off_chain_events": sum(e.value["type"] in TALK for e in (events if sub_agent else main)) - len(used),
            "tool_use_result_bytes": sum(len(dumps(e.value["toolUseResult"])) for e in used if "toolUseResult" in e.value),
        }
        session = next((e.value["sessionId"] for e in events if isinstance(e.value.get("sessionId"), str)), None)
        conversation_id = file_conversation_id(path) if sub_agent or not session else session
        metadata = {"source_format": self.name, "session_id": session}
        for name in SESSION_FIELDS:
            found = [e.value[name] for e in used if name in e.value]
            if found:
                metadata[name] = found[-1]
        if assistants and "model" in assistants[-1]:
            metadata["model"] = assistants[-1]["model"]
        if usage is not None:
            metadata["usage"] = usage
        if sub_agent:
            metadata["sub_agent"] = True
        metadata["events"] = [e.value for e in events if e.value["type"] not in TALK]
        metadata["stats"] = stats
        if stats["tool_use_result_bytes"]:
            notes.append(f"dropped toolUseResult duplicates of tool results ({stats['tool_use_result_bytes']} bytes)")
        conversation = Conversation(
            id=conversation_id, messages=messages, source=events[0].source, format=self.name, layout=MESSAGE,
            record={"id": conversation_id, "messages": [], "metadata": metadata},
            recorded_prompt_tokens=context_tokens(usage), notes=notes, raw_records=[e.value for e in events],
            message_lines=lines,
            native=NativeLog(events, [tuple(t.sources) for t in turns], rejected),
        )
        conversation.stats = stats   # read by the run report when Conversation has a stats field
        return conversation

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        return lines_as_read(conversation)

    def write_compacted(self, conversation: Conversation, compaction: Any, layout: str, options: Any) -> Any:
        require_native(self.name, conversation)
        return write_session(conversation, compaction, options)
