"""A compacted Claude Code session, written the way Claude Code compacts itself.

After the session's lines (history=keep: every input line byte for byte; drop:
only the lines that are not messages, which Claude Code keeps beside the chain):
- a `system` line `subtype: "compact_boundary"`, `parentUuid: null` (Claude
  Code's walk back from the newest message stops there), `logicalParentUuid` the
  last line before it, `compactMetadata: {trigger, preTokens}`;
- the kept head, then a `user` line `isCompactSummary: true` holding the summary,
  then the kept tail, each line chained to the one before (`parentUuid`), so
  Claude Code follows the new chain and never the old parents back into the
  full history.
Copied messages get fresh uuids and fresh `message.id`s (Claude Code regroups
assistant lines by `message.id` across the whole file, so a shared one would
pull the originals back in) and keep everything else their line had
(`cwd`, `version`, `gitBranch`, `requestId`, `message.model`...); their recorded
usage is zeroed, as Claude Code does for the messages a compaction keeps, since
it describes the context before compaction. With history=keep the new lines are
stamped after the newest input line: Claude Code resumes the newest leaf of the
file, and an original leaf as old as a copy would win the tie.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hermes_pipeline.formats.anthropic import KEY, group_to_message
from hermes_pipeline.formats.base import DROP, WriteOptions, Written
from hermes_pipeline.formats.native import (
    NativeLog,
    Parts,
    history_row,
    split_output,
    stable_hex,
    stable_uuid,
    verbatim,
)
from hermes_pipeline.formats.roundtrip import regroup

TALK = ("user", "assistant")
NOT_COPIED = ("uuid", "parentUuid", "logicalParentUuid", "message", "toolUseResult", "isSidechain", "timestamp",
              "isCompactSummary", "isVisibleInTranscriptOnly", "sourceToolAssistantUUID", "sourceToolUseID",
              "type", "subtype", "compactMetadata", "content", "level")
SESSION_FIELDS = ("userType", "cwd", "sessionId", "version", "gitBranch", "slug", "entrypoint")
ZERO_USAGE = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _role_of(message: dict) -> str:
    return "assistant" if message.get("role") == "assistant" else "user"


def _later(timestamp: Any, milliseconds: int) -> str | None:
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    later = moment + timedelta(milliseconds=milliseconds)
    return later.strftime("%Y-%m-%dT%H:%M:%S.") + f"{later.microsecond // 1000:03d}Z"


class _Chain:
    """The new lines, each chained to the one before it."""

    def __init__(self, log: NativeLog, salt: str, stamp: str | None):
        self.log, self.salt, self.stamp = log, salt, stamp
        talk = [r.value for r in log.records if r.value.get("type") in TALK]
        main = [t for t in talk if not t.get("isSidechain")]
        self.sidechain = bool(talk) and not main         # a sub-agent's own log: its lines stay sub-agent lines
        talk = main or talk
        last = talk[-1] if talk else {}
        self.session = {k: last[k] for k in SESSION_FIELDS if k in last}
        self.model = next((t["message"].get("model") for t in reversed(talk)
                           if t["type"] == "assistant" and t["message"].get("model")), None)
        self.lines: list[dict] = []
        self.parent: str | None = None

    def _line(self, template: dict, kind: str, fields: dict) -> dict:
        key = template.get("uuid") or len(self.lines)
        line = {"parentUuid": self.parent, "isSidechain": self.sidechain, **self.session,
                **{k: v for k, v in template.items() if k not in NOT_COPIED}, "type": kind, **fields,
                "uuid": stable_uuid(self.salt, key, len(self.lines)),
                "timestamp": self.stamp or template.get("timestamp") or self.session_time()}
        self.parent = line["uuid"]
        self.lines.append(line)
        return line

    def session_time(self) -> str | None:
        stamps = [r.value.get("timestamp") for r in self.log.records if isinstance(r.value.get("timestamp"), str)]
        return stamps[-1] if stamps else None

    def boundary(self, logical_parent: str | None, pre_tokens: int) -> None:
        self._line({}, "system", {"subtype": "compact_boundary", "content": "Conversation compacted",
                                  "isMeta": False, "level": "info",
                                  "compactMetadata": {"trigger": "auto", "preTokens": pre_tokens},
                                  "logicalParentUuid": logical_parent})
        self.lines[-1]["parentUuid"] = None

    def summary(self, text: str) -> None:
        self._line({}, "user", {"message": {"role": "user", "content": text}, "isCompactSummary": True,
                                "isVisibleInTranscriptOnly": True})

    def messages(self, pieces: list[dict]) -> list[int]:
        """Lines for kept messages; returns the input lines they were copied from."""
        copied: list[int] = []
        for group in regroup(pieces, KEY, _role_of):
            message = group_to_message(group)
            sources = self.log.sources[group.number] if group.number is not None \
                and group.number < len(self.log.sources) else ()
            records = [self.log.records[i] for i in sources]
            copied.extend(r.line_no for r in records)
            same_role = [r.value for r in records if r.value.get("type") == group.role]
            template = (same_role[-1] if group.role == "assistant" else same_role[0]) if same_role else {}
            content = {"role": group.role, "content": message["content"]}
            if group.role == "assistant":
                content = self._assistant(template.get("message") or {}, message["content"])
            self._line(template, group.role, {"message": content})
        return copied

    def _assistant(self, original: dict, content: Any) -> dict:
        out = {"id": None, "type": "message", "role": "assistant", "model": self.model or "unknown",
               **{k: v for k, v in original.items() if k not in ("content", "id")}}
        out["id"] = "msg_" + stable_hex(24, self.salt, len(self.lines))
        out["content"] = content
        usage = out.get("usage") if isinstance(out.get("usage"), dict) else {}
        out["usage"] = {**usage, **ZERO_USAGE}
        out.setdefault("stop_reason", "end_turn")
        out.setdefault("stop_sequence", None)
        return out


def write_session(conversation, compaction, options: WriteOptions) -> Written:
    log: NativeLog = conversation.native
    if not compaction.outcome.compacted:
        return Written(log.every_line(), history_row(log, options.history, log.every_line_no(), [], 0))
    parts: Parts = split_output(compaction.messages, compaction.outcome)
    drop = options.history == DROP
    newest = max((r.value["timestamp"] for r in log.records if isinstance(r.value.get("timestamp"), str)),
                 default=None)
    stamp = None if drop or newest is None else _later(newest, 1)
    salt = stable_hex(16, conversation.id, len(log.records), parts.summary or "")
    chain = _Chain(log, salt, stamp)
    last_uuid = next((r.value["uuid"] for r in reversed(log.records) if isinstance(r.value.get("uuid"), str)
                      and bool(r.value.get("isSidechain")) == chain.sidechain), None)
    chain.boundary(last_uuid, conversation.recorded_prompt_tokens or compaction.outcome.tokens_before)
    copied = chain.messages(parts.head)
    if parts.summary is not None:
        chain.summary(parts.summary)
    copied += chain.messages(parts.tail)
    if drop:
        kept = [r for r in log.records if r.value.get("type") not in TALK]
        lines, kept_numbers = [verbatim(r) for r in kept], [r.line_no for r in kept]
    else:
        lines, kept_numbers, copied = log.every_line(), log.every_line_no(), []
    return Written(lines + chain.lines, history_row(log, options.history, kept_numbers, copied, len(chain.lines)))
