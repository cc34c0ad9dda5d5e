"""Codex CLI rollouts, read and written back as Codex's own compaction.

Reading (codex_rollout.py replays the file): the conversation is what Codex
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

Writing: every line of the rollout as it was, then, when the engine changed
the conversation, one `compacted` line whose `replacement_history` is head +
summary + tail as Codex items (an unchanged message is its items as read; a
changed or new one is built from its OpenAI form), which `codex resume` loads.
Messages keep only a small mark (`_codex`: message number, fingerprint); the
writer reads the rollout again for the items behind it.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.base import MESSAGE, TranscriptFormat, file_conversation_id, gather
from hermes_pipeline.formats.codex_rollout import (
    ENVELOPES, Rollout, context_tokens, is_codex_summary, is_context_message, item_text, line_problem, replay,
)
from hermes_pipeline.formats.roundtrip import fingerprint
from hermes_pipeline.jsonl import Record, Rejected
from hermes_pipeline.repair import repair_tool_pairing
from hermes_pipeline.transcript import (
    SUMMARY_PREFIX, Conversation, is_summary_message, message_text, tool_calls, unmarked,
)

KEY = "_codex"
CALLS = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
CARRIED = ("ghost_snapshot", "compaction", "compaction_summary", "context_compaction", "compaction_trigger",
           "additional_tools", "configuration_update")
SYSTEM = 0      # the mark of the system message


# -- items -> OpenAI messages --------------------------------------------------------

def _call(item: dict) -> dict:
    kind = item["type"]
    call_id = item.get("call_id") or item.get("id") or ""
    if kind == "function_call":
        name, arguments = item.get("name"), item.get("arguments")
    elif kind == "custom_tool_call":
        name, arguments = item.get("name"), item.get("input")
    elif kind == "local_shell_call":
        name, arguments = "local_shell", item.get("action")
    else:
        name, arguments = "tool_search", item.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": str(name or kind), "arguments": arguments}}


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


class _Reader:
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
                assistant.setdefault("tool_calls", []).append(_call(item))
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


# -- OpenAI messages -> items ---------------------------------------------------------

def _mark(message: dict) -> dict | None:
    mark = message.get(KEY)
    return mark if isinstance(mark, dict) and isinstance(mark.get("g"), int) else None


def _parts(content: Any, role: str) -> list[dict]:
    text_type = "output_text" if role == "assistant" else "input_text"
    if isinstance(content, str):
        return [{"type": text_type, "text": content}] if content or role != "assistant" else []
    parts = []
    for part in content or ():
        if not isinstance(part, dict) or part.get("type") == "reasoning":
            continue
        if part.get("type") == "text":
            part = {"type": text_type, "text": part.get("text", "")}
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            part = {"type": "input_image", "image_url": url.get("url") if isinstance(url, dict) else url}
        parts.append(part)
    return parts


def _call_item(call: dict, original: dict | None) -> dict:
    if original is not None and _call(original) == call:
        return original
    function = call.get("function") or {}
    name, arguments = function.get("name"), function.get("arguments")
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
    if original is not None and original["type"] == "custom_tool_call":
        return {**original, "name": name, "input": arguments}
    base = original if original is not None and original["type"] == "function_call" else {}
    return {**base, "type": "function_call", "name": name, "arguments": arguments, "call_id": call.get("id") or ""}


class _Writer:
    """The replacement history for a conversation's messages (sources as `_Reader` made them)."""

    def __init__(self, read: _Reader):
        self.read = read
        self.calls = {_call(i)["id"]: i for items in read.sources for i in items if i.get("type") in CALLS}

    def items(self, messages: list[dict]) -> list[dict]:
        """Each message's items, with the carried items of the messages as read kept in order: those of a
        message the engine removed go before what replaced it (the summary)."""
        out: list[dict] = []
        carried, done = self.read.carried, 0
        for index, message in enumerate(messages):
            mark = _mark(message)
            upto = mark["g"] + 1 if mark is not None else self._next_mark(messages, index)
            while done < min(upto, len(carried)):
                out.extend(carried[done])
                done += 1
            out.extend(self._message_items(unmarked(message), mark))
        for items in carried[done:]:
            out.extend(items)
        return out + self.read.trailing

    def _next_mark(self, messages: list[dict], index: int) -> int:
        return next((m["g"] for m in map(_mark, messages[index + 1:]) if m is not None), len(self.read.carried))

    def _message_items(self, message: dict, mark: dict | None) -> list[dict]:
        sources = self.read.sources[mark["g"]] if mark is not None and mark["g"] < len(self.read.sources) else []
        if mark is not None and mark["g"] == SYSTEM and message.get("role") == "system":
            return list(sources)      # the base instructions live in session_meta, not in the history
        if mark is not None and mark.get("fp") == fingerprint(message):
            return list(sources)
        role = message.get("role")
        if role == "tool":
            return [self._output(message, sources[0] if sources else None)]
        if role == "assistant":
            return self._assistant(message, sources)
        original = next((i for i in sources if i.get("type") == "message"), {})
        item_role = original.get("role") or ("developer" if role in ("developer", "system") else "user")
        content = _parts(message.get("content"), item_role)
        return [{**original, "type": "message", "role": item_role, "content": content}]

    def _output(self, message: dict, original: dict | None) -> dict:
        """A changed tool row (its output cleared, or a stub for a call whose output was dropped)."""
        call_id = message.get("tool_call_id") or ""
        if original is not None and original.get("type") not in ("function_call_output", "custom_tool_call_output"):
            return original       # an output without a text form (tool_search_output) stays as it was
        custom = (self.calls.get(call_id) or {}).get("type") == "custom_tool_call"
        kind = original["type"] if original is not None else \
            "custom_tool_call_output" if custom else "function_call_output"
        output = message.get("content")
        if not isinstance(output, (str, list)):
            output = json.dumps(output, ensure_ascii=False)
        return {**(original or {}), "type": kind, "call_id": call_id, "output": output}

    def _assistant(self, message: dict, sources: list[dict]) -> list[dict]:
        """A changed assistant message: its reasoning items kept, its text and calls as they are now."""
        calls = {call.get("id"): call for call in tool_calls(message)}
        text = [p for p in _parts(message.get("content"), "assistant") if p.get("type") == "output_text"
                and p.get("text")]
        out, text_done = [], not text
        for item in sources:
            kind = item.get("type")
            if kind == "message" or (kind in CALLS and not text_done):
                if not text_done:
                    out.append({**(item if kind == "message" else {"type": "message", "role": "assistant"}),
                                "content": text})
                    text_done = True
            if kind in CALLS and _call(item)["id"] in calls:
                out.append(_call_item(calls.pop(_call(item)["id"]), item))
            elif kind not in CALLS and kind != "message":
                out.append(item)      # reasoning and other model output, as it was
        if not text_done:
            out.append({"type": "message", "role": "assistant", "content": text})
        return out + [_call_item(call, self.calls.get(call_id)) for call_id, call in calls.items()]


# -- the format ---------------------------------------------------------------------

def _read(lines: list[dict]) -> tuple[Rollout, _Reader]:
    rollout = replay(lines)
    return rollout, _Reader(rollout)


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
        yield compacted_line(lines, _Writer(read).items(conversation.messages), _summary_text(conversation.messages))


def _summary_text(messages: list[dict]) -> str:
    return next((message_text(m) for m in messages if _mark(m) is None and is_summary_message(m)), "")


def compacted_line(lines: list[dict], replacement: list[dict], summary: str) -> dict:
    """Codex's own compaction record, after the rollout's last line (same timestamp: output is reproducible)."""
    last = lines[-1]
    line: dict = {"timestamp": last.get("timestamp")}
    ordinals = [v["ordinal"] for v in lines if isinstance(v.get("ordinal"), int)]
    if ordinals:      # a paginated rollout: Codex refuses a last line without one
        line["ordinal"] = max(ordinals) + 1
    line.update(type="compacted", payload={"message": summary, "replacement_history": replacement})
    return line

