"""Codex CLI rollouts, read and written back as Codex's own compaction.

Reading (rollout.py replays the file): the conversation is what Codex
would send next, after its latest `compacted` line: a system message (the base
instructions of `session_meta`, plus the instruction and environment messages
Codex puts before the first user turn), then the history as OpenAI messages.
The items one model response wrote (reasoning, text, calls) become one assistant
message: calls (`function_call`, `custom_tool_call`, `local_shell_call`,
`tool_search_call`) its `tool_calls`, reasoning a `{"type": "reasoning"}` part
(its summary text; the encrypted content stays in the item); every output
becomes a `role: tool` row with the call's `call_id`. Instruction and
environment messages are `developer` rows, a Codex summary a user message
starting with `SUMMARY_PREFIX`. Items Codex keeps but the model does not read
as text (ghost snapshots, encrypted compaction summaries) are carried: never
dropped. The usage is the newest `token_count` for this history.

Writing back: writer.py.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.base import MESSAGE, TranscriptFormat, file_conversation_id, gather
from hermes_pipeline.formats.codex.items import CALLS, CARRIED, KEY, OUTPUTS, call_of
from hermes_pipeline.formats.codex.rollout import (
    ENVELOPES,
    Rollout,
    context_tokens,
    is_codex_summary,
    is_context_message,
    item_text,
    line_problem,
    replay,
)
from hermes_pipeline.formats.codex.writer import ReplacementHistory, compacted_line, summary_text
from hermes_pipeline.formats.roundtrip import fingerprint
from hermes_pipeline.inputs.jsonl import Record, Rejected
from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.transcript import (
    SUMMARY_PREFIX,
    Conversation,
    unmarked,
)

# -- items -> OpenAI messages --------------------------------------------------------

def _output_content(item: dict) -> Any:
    output = item.get("output") if "output" in item else item.get("tools")
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(p, dict) for p in output):
        return [dict(p) for p in output]
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]          # an older {content, success} payload
    return json.dumps(output, ensure_ascii=False)


def _model_part(item: dict) -> dict:
    """What a non-message model output shows in the assistant message's content."""
    if item["type"] == "reasoning":
        texts = [p.get("text") for p in (item.get("summary") or []) + (item.get("content") or [])
                 if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return {"type": "reasoning", "summary": "\n".join(texts)}
    part = {"type": item["type"]}
    if isinstance(item.get("action"), dict):
        part["action"] = item["action"]
    return part


class HistoryReader:
    """Turns a replayed history into messages; `sources[n]` are the items behind message n."""

    def __init__(self, rollout: Rollout):
        self.messages: list[dict] = []
        self.sources: list[list[dict]] = []
        self.carried: list[list[dict]] = []     # per message: carried items just before it
        self._pending: list[dict] = []
        history = rollout.history
        lead = 0
        while lead < len(history) and (is_context_message(history[lead]) or history[lead].get("type") in CARRIED):
            lead += 1
        self._system(rollout.base_instructions, history[:lead])
        assistant: dict | None = None
        for item in history[lead:]:
            kind = item.get("type")
            if kind in CARRIED:
                self._pending.append(item)
                continue
            is_reply = kind in CALLS or (kind == "message" and item.get("role") == "assistant") \
                or (kind not in OUTPUTS and kind != "message")
            if not is_reply:
                assistant = None
                self._add(self._row(item), [item])
                continue
            if assistant is None:
                assistant = {"role": "assistant", "content": []}
                self._add(assistant, [])
            self.sources[-1].append(item)
            if kind in CALLS:
                assistant.setdefault("tool_calls", []).append(call_of(item))
            elif kind == "message":
                content = item.get("content")
                assistant["content"].extend([{"type": "output_text", "text": content}] if isinstance(content, str)
                                            else (dict(p) for p in content or () if isinstance(p, dict)))
            else:
                assistant["content"].append(_model_part(item))
        self.trailing = self._pending
        for number, message in enumerate(self.messages):
            if message["role"] == "assistant" and not message["content"] and message.get("tool_calls"):
                message["content"] = None
            message[KEY] = {"g": number, "fp": fingerprint(unmarked(message))}

    def _system(self, base: str | None, lead: list[dict]) -> None:
        texts = ([base] if base else []) + [item_text(i) for i in lead if i.get("type") == "message"]
        if texts or lead:
            self._add({"role": "system", "content": "\n\n".join(texts)}, list(lead))

    def _add(self, message: dict, items: list[dict]) -> None:
        self.messages.append(message)
        self.sources.append(items)
        self.carried.append(self._pending)
        self._pending = []

    @staticmethod
    def _row(item: dict) -> dict:
        kind = item["type"]
        if kind in OUTPUTS:
            return {"role": "tool", "tool_call_id": item.get("call_id") or "", "content": _output_content(item)}
        if is_codex_summary(item):
            return {"role": "user", "content": f"{SUMMARY_PREFIX}\n{item_text(item)}"}
        role = "developer" if is_context_message(item) else item.get("role", "user")
        content = item.get("content")
        return {"role": role, "content": [dict(p) for p in content if isinstance(p, dict)]
                if isinstance(content, list) else content}


# -- the format ---------------------------------------------------------------------

def _read(lines: list[dict]) -> tuple[Rollout, HistoryReader]:
    rollout = replay(lines)
    return rollout, HistoryReader(rollout)


class CodexFormat(TranscriptFormat):
    name = "codex"

    def detect(self, value: Any) -> str | None:
        if isinstance(value, dict) and value.get("type") in ENVELOPES and isinstance(value.get("payload"), dict) \
                and "timestamp" in value:
            return MESSAGE
        return None

    def read(self, items: Iterable[Record | Rejected], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        records: list[Record] = []
        yield from gather(items, line_problem, records)
        if records:
            notes = [f"line {r.line_no}: {repair}" for r in records for repair in r.repairs]
            yield self._conversation([r.value for r in records], path, records[0].source, notes)

    def _conversation(self, lines: list[dict], path: str, source: str, notes: list[str]) -> Conversation:
        rollout, read = _read(lines)
        session = rollout.meta.get("id") if isinstance(rollout.meta.get("id"), str) else None
        conversation_id = session or file_conversation_id(path)
        metadata = {"source_format": self.name, "session_id": session}
        for name in ("cwd", "cli_version", "originator", "model_provider"):
            if isinstance(rollout.meta.get(name), str):
                metadata[name] = rollout.meta[name]
        if rollout.model:
            metadata["model"] = rollout.model
        if rollout.usage is not None:
            metadata["usage"] = rollout.usage
        stats = {"records": len(lines), "history_items": len(rollout.history), "codex_compactions": rollout.compactions,
                 "rollbacks": rollout.rollbacks, "carried_items": sum(map(len, read.carried)) + len(read.trailing)}
        return Conversation(
            id=conversation_id, messages=read.messages, source=source, format=self.name, layout=MESSAGE,
            record={"id": conversation_id, "messages": [], "metadata": metadata},
            recorded_prompt_tokens=context_tokens(rollout.usage), notes=notes, stats=stats, raw_records=lines,
        )

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        if conversation.format != self.name or conversation.raw_records is None:
            raise ValueError("only a Codex rollout can be written as one (output.format=codex)")
        lines = conversation.raw_records
        yield from lines
        rollout, read = _read(lines)
        as_read = Conversation(conversation.id, read.messages, conversation.source, self.name, MESSAGE)
        if conversation.messages in (read.messages, repair_tool_pairing(as_read).messages):
            return      # the engine changed nothing: the rollout stays as it was
        yield compacted_line(lines, ReplacementHistory(read).items(conversation.messages),
                                 summary_text(conversation.messages))


