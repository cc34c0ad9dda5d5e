"""Exact round trips for formats whose messages are not OpenAI chat messages.

A reader turns each source message (an Anthropic message, a ShareGPT turn)
into one or more OpenAI messages, its "pieces". Every piece carries, under a
private key (a name starting with "_"), the group number of its source
message, a fingerprint of the piece as read, and whatever the writer needs to
rebuild it; the first piece also keeps the source message itself.

A writer regroups the pieces into source messages. A group made of exactly the
pieces of one source message, none of them changed, is written back as the
original. Anything else is converted from its OpenAI form, reusing what the
unchanged pieces kept. The engine never needs to know: it edits or creates
plain OpenAI messages, and a changed message simply stops matching its
fingerprint.
"""
from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable


def public(message: dict) -> dict:
    """The message without private keys (those starting with "_")."""
    return {k: v for k, v in message.items() if not (isinstance(k, str) and k.startswith("_"))}


def fingerprint(message: dict) -> str:
    try:
        data = json.dumps(public(message), sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        return ""
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def clone(value: Any) -> Any:
    """A copy the engine may edit without touching what the writer keeps."""
    return value if isinstance(value, str) else copy.deepcopy(value)


def tag(pieces: list[dict], key: str, group: int, original: Any, kept: list[Any]) -> list[dict]:
    """Mark the pieces of one source message; `kept[i]` is what piece i rebuilds from."""
    for i, piece in enumerate(pieces):
        private = {"g": group, "fp": fingerprint(piece), "kept": kept[i]}
        if i == 0:
            private.update(orig=original, n=len(pieces))
        piece[key] = private
    return pieces


def private(message: dict, key: str) -> dict | None:
    value = message.get(key)
    return value if isinstance(value, dict) else None


def kept_if_unchanged(message: dict, key: str) -> tuple[bool, Any]:
    """(True, what the reader kept) when the piece is exactly as it was read."""
    mark = private(message, key)
    if mark is not None and "kept" in mark and mark.get("fp") == fingerprint(message):
        return True, mark["kept"]
    return False, None


@dataclass
class Group:
    role: str                       # the role in the target format
    pieces: list[dict] = field(default_factory=list)
    number: int | None = None       # source message number, None for a new message


def _joins(group: Group, message: dict, mark: dict | None) -> bool:
    after_results = all(p.get("role") == "tool" for p in group.pieces)
    tool_run = message.get("role") == "tool" and after_results
    if mark is None:
        # made by the engine: stub tool results join a run of results, and so does a user message
        # (a summary) right after them, as a text block after the results: roles keep alternating
        return after_results and message.get("role") in ("tool", "user")
    if "orig" in mark:             # the start of a source message; joins only engine-made results
        return tool_run and group.number is None
    return mark.get("g") == group.number or tool_run


def regroup(messages: list[dict], key: str, role_of: Callable[[dict], str]) -> list[Group]:
    groups: list[Group] = []
    for message in messages:
        target_role = role_of(message)
        mark = private(message, key)
        current = groups[-1] if groups else None
        if current is not None and current.role == target_role and _joins(current, message, mark):
            current.pieces.append(message)
        else:
            groups.append(Group(target_role, [message], mark.get("g") if mark else None))
    return groups


def original_of(group: Group, key: str) -> Any | None:
    """The source message when the group is exactly its unchanged pieces, else None."""
    first = private(group.pieces[0], key)
    if first is None or "orig" not in first or first.get("n") != len(group.pieces):
        return None
    for piece in group.pieces:
        mark = private(piece, key)
        if mark is None or mark.get("g") != first["g"] or not kept_if_unchanged(piece, key)[0]:
            return None
    return first["orig"]


def source_fields(group: Group, key: str, skip: tuple[str, ...]) -> dict:
    """The other fields of the group's source message (kept when it is rebuilt)."""
    first = private(group.pieces[0], key)
    original = first.get("orig") if first else None
    if not isinstance(original, dict):
        return {}
    return {k: v for k, v in original.items() if k not in skip}


def carried_record(conversation, format_name: str, foreign_keys: tuple[str, ...]) -> dict:
    """The conversation's record to write back; another format's message lists are dropped."""
    record = dict(conversation.record) if isinstance(conversation.record, dict) else {"id": conversation.id}
    if conversation.format != format_name:
        for name in foreign_keys:
            record.pop(name, None)
    return record
