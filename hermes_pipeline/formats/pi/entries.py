"""What the pi reader and writer share: the branch pi walks, its timestamps, its blocks as Anthropic's."""
from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from hermes_pipeline.inputs.jsonl import Record


def millis(value: Any) -> int | None:
    """Milliseconds since the epoch of a pi timestamp (a number, or an ISO string as entries have)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value) if math.isfinite(value) else None     # a NaN timestamp (JSON allows it in logs) is none
    try:
        return round(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def branch_path(entries: list[Record], notes: list[str]) -> list[Record]:
    """Entries from the root to the last one, following parentId (linear for version 1)."""
    if not entries:
        return []
    if not any(isinstance(e.value.get("id"), str) for e in entries):
        return list(entries)
    position = {e.value["id"]: i for i, e in enumerate(entries) if isinstance(e.value.get("id"), str)}
    chosen, bridged, i = [], 0, len(entries) - 1
    while i is not None:
        chosen.append(i)
        parent = entries[i].value.get("parentId")
        if parent is None and "parentId" in entries[i].value:
            break                                    # the root
        j = position.get(parent) if isinstance(parent, str) else None
        if j is None or j >= i:
            j = i - 1 if i > 0 else None
            bridged += j is not None
        i = j
    if bridged:
        notes.append(f"{bridged} entr(y/ies) had no parent entry in the log; each was joined to the line before it")
    return [entries[i] for i in reversed(chosen)]


def anthropic_block(block: dict) -> dict:
    kind = block["type"]
    if kind == "image":
        return {"type": "image", "source": {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}}
    if kind == "thinking":
        signature = block.get("thinkingSignature")
        if block.get("redacted") and isinstance(signature, str):
            return {"type": "redacted_thinking", "data": signature}
        if not isinstance(signature, str) or not signature:
            # another provider's reasoning (GLM, ...): Anthropic refuses a thinking block without its own
            # signature, so pi sends it as text; so does this conversation
            return {"type": "text", "text": block["thinking"]}
        return {"type": "thinking", "thinking": block["thinking"], "signature": signature}
    if kind == "toolCall":
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block.get("arguments", {})}
    return {"type": "text", "text": block["text"]}
