"""A compacted pi session, written the way pi compacts itself.

After the session's lines (history=keep: every input line byte for byte; drop:
the header and the settings entries on the current branch, chained again), a
`compaction` entry (`summary`, `firstKeptEntryId`, `tokensBefore`), then the
kept head and tail as entries chained after it. pi sends the summary of the
latest compaction on the branch, the entries from `firstKeptEntryId` up to the
compaction (none here: the first kept entry is the first copy, after it), then
what follows it: the summary, the head, the tail. Entries get ids when the
header has a `version` (version 1 logs have none: the compaction names its
first kept entry by index, `firstKeptEntryIndex`, as pi 1 wrote it). A kept
message is its entry as read when the engine left it alone, else that entry
with the new content; the last assistant message keeps its usage, and the
compaction is stamped no earlier than any kept message, so pi reads that usage
as the context before the compaction and does not compact again at once.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from hermes_pipeline.formats.anthropic import KEY
from hermes_pipeline.formats.base import DROP, WriteOptions, Written
from hermes_pipeline.formats.native import NativeLog, history_row, split_output, stable_hex, verbatim
from hermes_pipeline.formats.pi.entries import anthropic_block, branch_path, millis
from hermes_pipeline.formats.roundtrip import kept_if_unchanged, private
from hermes_pipeline.inputs.jsonl import Record
from hermes_pipeline.transcript import SUMMARY_PREFIX, text_of

CONTEXT = ("message", "compaction", "branch_summary", "custom_message")


def _iso(millis: float) -> str:
    moment = datetime.fromtimestamp(millis / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _text_blocks(content: Any) -> list[dict]:
    """pi content blocks (text, image) for OpenAI content."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out = []
    for part in content or ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image" and isinstance(part.get("source"), dict):
            out.append({"type": "image", "data": part["source"].get("data", ""),
                        "mimeType": part["source"].get("media_type", "image/png")})
        elif part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            mime, _, data = url[5:].partition(";base64,") if url.startswith("data:") else ("", "", "")
            out.append({"type": "image", "data": data, "mimeType": mime} if data
                       else {"type": "text", "text": url})
        elif isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
    return out


def _key(block: dict) -> str:
    return json.dumps(block, sort_keys=True, default=str)


def _assistant_blocks(piece: dict, original: list) -> list[dict]:
    """pi assistant content for an OpenAI assistant message: a block as read when the engine left it
    (found by the form the reader gave it), else converted."""
    read_as = {_key(anthropic_block(b)): b for b in original if isinstance(b, dict) and "type" in b}
    out = []
    for part in piece.get("content") or ():
        if not isinstance(part, dict):
            continue
        if _key(part) in read_as:
            out.append(read_as[_key(part)])
        elif part.get("type") == "thinking":
            out.append({"type": "thinking", "thinking": part.get("thinking", ""),
                        "thinkingSignature": part.get("signature", "")})
        elif part.get("type") == "redacted_thinking":
            out.append({"type": "thinking", "thinking": "", "thinkingSignature": part.get("data", ""),
                        "redacted": True})
        else:
            out.extend(_text_blocks([part]))
    for call in piece.get("tool_calls") or ():
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except (TypeError, ValueError):
            arguments = {"arguments": function.get("arguments")}
        arguments = arguments if isinstance(arguments, dict) else {"arguments": arguments}
        use = {"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": arguments}
        out.append(read_as.get(_key(use)) or {"type": "toolCall", "id": call.get("id"),
                                              "name": function.get("name"), "arguments": arguments})
    return out


class _Entries:
    """The new entries, chained (when the log has ids)."""

    def __init__(self, log: NativeLog, with_ids: bool, salt: str, parent: str | None):
        self.log, self.with_ids, self.salt, self.parent = log, with_ids, salt, parent
        self.taken = {r.value.get("id") for r in log.records}
        self.entries: list[dict] = []

    def add(self, entry: dict) -> dict:
        entry = {k: v for k, v in entry.items() if k not in ("id", "parentId")}
        if self.with_ids:
            new_id = stable_hex(8, self.salt, len(self.entries))
            while new_id in self.taken:
                new_id = stable_hex(8, self.salt, len(self.entries), new_id)
            self.taken.add(new_id)
            entry = {"type": entry.pop("type"), "id": new_id, "parentId": self.parent, **entry}
            self.parent = new_id
        self.entries.append(entry)
        return entry

    def pieces(self, pieces: list[dict], stamp: str) -> list[int]:
        """Entries for kept messages; returns the input lines they were copied from."""
        copied: list[int] = []
        calls: dict[str, str] = {}
        for piece in pieces:
            records = [self.log.records[i] for i in self.log.lines_of(piece)]
            copied.extend(r.line_no for r in records)
            for call in piece.get("tool_calls") or ():
                calls[call.get("id")] = (call.get("function") or {}).get("name")
            unchanged = kept_if_unchanged(piece, KEY)[0] and private(piece, KEY) is not None
            for entry in self._entries_for(piece, records, unchanged, calls, stamp):
                self.add(entry)
        return copied

    @staticmethod
    def _earlier_summary(compaction: dict, piece: dict, unchanged: bool) -> dict:
        """An earlier compaction's summary, kept in the head: a compactionSummary message, which pi sends as
        it sends a compaction's (a second compaction entry would take the place of ours)."""
        message = {"role": "compactionSummary",
                   "summary": compaction["summary"] if unchanged else _summary_text(piece),
                   "tokensBefore": compaction.get("tokensBefore"), "timestamp": millis(compaction.get("timestamp"))}
        return {"type": "message", "timestamp": compaction.get("timestamp"), "message": message}

    def _entries_for(self, piece: dict, records: list[Record], unchanged: bool, calls: dict, stamp: str):
        role = piece.get("role")
        values = [r.value for r in records]
        if role == "tool":
            found = [v for v in values if v.get("type") == "message" and v["message"].get("role") == "toolResult"
                     and v["message"].get("toolCallId") == piece.get("tool_call_id")]
            if found and unchanged:
                return [found[0]]
            base = found[0] if found else {"type": "message", "timestamp": stamp}
            message = {"role": "toolResult", "toolCallId": piece.get("tool_call_id"),
                       "toolName": calls.get(piece.get("tool_call_id"), "unknown_tool"), "isError": False,
                       "timestamp": millis(stamp), **(base.get("message") or {})}
            message["content"] = _text_blocks(piece.get("content"))
            return [{**base, "message": message}]
        if role == "assistant":
            found = [v for v in values if v.get("type") == "message" and v["message"].get("role") == "assistant"]
            if found and unchanged:
                return [found[-1]]
            base = found[-1] if found else {"type": "message", "timestamp": stamp}
            message = {"role": "assistant", "stopReason": "stop", "timestamp": millis(stamp),
                       **(base.get("message") or {})}
            message["content"] = _assistant_blocks(piece, message.get("content") or [])
            return [{**base, "message": message}]
        own = [v for v in values if not (v.get("type") == "message" and v["message"].get("role") == "toolResult")]
        if own and own[0].get("type") == "compaction":     # an earlier summary the head kept: a summary still
            return [self._earlier_summary(own[0], piece, unchanged)]
        if unchanged and own and all(v.get("type") in ("message", "custom_message", "branch_summary") for v in own):
            return own
        base = next((v for v in own if v.get("type") == "message"), None) or \
            {"type": "message", "timestamp": own[0].get("timestamp", stamp) if own else stamp}
        message = {"role": "user", "timestamp": millis(base.get("timestamp", stamp)), **(base.get("message") or {})}
        message["role"] = "user"
        message["content"] = _text_blocks(piece.get("content"))
        return [{**base, "message": message}]


def _summary_text(piece: dict) -> str:
    text = text_of(piece.get("content"))
    return text[len(SUMMARY_PREFIX):].lstrip("\n") if text.startswith(SUMMARY_PREFIX) else text


def _settings_chain(log: NativeLog, header: Record | None) -> tuple[list, list[int], list[int], str | None]:
    """history=drop keeps the header and the entries that are not messages on the current branch
    (model, thinking level, extension state, session name), chained again:
    (lines, kept line numbers, rewritten line numbers, the last entry's id)."""
    entries = [r for r in log.records if r.value.get("type") != "session"]
    out, kept, rewritten, parent = [], [], [], None
    if header is not None:
        out.append(verbatim(header))
        kept.append(header.line_no)
    for record in branch_path(entries, []):
        value = record.value
        if value.get("type") in CONTEXT:
            continue
        if "id" not in value or value.get("parentId") == parent:
            out.append(verbatim(record))
            kept.append(record.line_no)
        else:
            out.append({**value, "parentId": parent})
            rewritten.append(record.line_no)
        parent = value.get("id", parent)
    return out, kept, rewritten, parent


def write_session(conversation, compaction, options: WriteOptions) -> Written:
    log: NativeLog = conversation.native
    if not compaction.outcome.compacted:
        return Written(log.every_line(), history_row(log, options.history, log.every_line_no(), [], 0))
    parts = split_output(compaction.messages, compaction.outcome)
    header = next((r for r in log.records if r.value.get("type") == "session"), None)
    has_ids = any(isinstance(r.value.get("id"), str) for r in log.records if r.value.get("type") != "session")
    with_ids = has_ids or (header is not None and header.value.get("version") is not None)
    out: list = []
    if header is None or log.records[0] is not header:     # pi opens a file only when a header comes first
        out.append({"type": "session", "version": 3, "id": conversation.id,
                    "timestamp": next((r.value.get("timestamp") for r in log.records), None)})
    if options.history == DROP:
        lines, kept, rewritten, last_id = _settings_chain(log, header if header is log.records[0] else None)
        out += lines
    else:       # the compaction hangs off the entry pi resumes from: the last one in the file
        out += log.every_line()
        kept, rewritten = log.every_line_no(), []
        last_id = next((r.value["id"] for r in reversed(log.records)
                        if isinstance(r.value.get("id"), str) and r.value.get("type") != "session"), None)
    stamps = [m for m in (millis(r.value.get("timestamp")) for r in log.records) if m is not None]
    stamps += [m for m in (millis((r.value.get("message") or {}).get("timestamp"))
                           for r in log.records if isinstance(r.value.get("message"), dict)) if m is not None]
    stamp = _iso(max(stamps)) if stamps else None
    salt = stable_hex(16, conversation.id, len(log.records), parts.summary or "")
    chain = _Entries(log, with_ids, salt, last_id)
    compaction_entry = chain.add({"type": "compaction", "timestamp": stamp,
                                  "summary": parts.sections or parts.summary or "",
                                  "firstKeptEntryId": None,
                                  "tokensBefore": conversation.recorded_prompt_tokens
                                  or compaction.outcome.tokens_before})
    copied = chain.pieces(parts.head + parts.tail, stamp)
    first_copy = chain.entries[1] if len(chain.entries) > 1 else None
    if with_ids:
        compaction_entry["firstKeptEntryId"] = first_copy["id"] if first_copy else compaction_entry["id"]
    else:
        del compaction_entry["firstKeptEntryId"]
        compaction_entry["firstKeptEntryIndex"] = len(out) + 1
    row = history_row(log, options.history, kept, rewritten + (copied if options.history == DROP else []),
                      len(out) + len(chain.entries) - len(kept))
    return Written(out + chain.entries, row)
