"""The Codex items the rollout reader and writer share: which are calls, outputs and carried items, a call
as an OpenAI tool call, and the mark a message read from a rollout carries."""
from __future__ import annotations

import json

KEY = "_codex"
CALLS = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
CARRIED = ("ghost_snapshot", "compaction", "compaction_summary", "context_compaction", "compaction_trigger",
           "additional_tools", "configuration_update")
SYSTEM = 0      # the mark of the system message


def call_of(item: dict) -> dict:
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


def mark_of(message: dict) -> dict | None:
    mark = message.get(KEY)
    return mark if isinstance(mark, dict) and isinstance(mark.get("g"), int) else None
