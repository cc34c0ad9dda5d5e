"""A Hermes-format trajectory set built from the shared real logs, by hermes-agent's own converter.

The repository has no Hermes trajectories, so they are made deterministically:
every conversation of the shared corpus (200 tau-bench conversations, the
Claude Code logs) and of the long sessions is read with this project's
readers, its messages made plain text (trajectories are text only), and
turned into ShareGPT turns by `convert_to_trajectory_format` from hermes-agent
(`agent/agent_runtime_helpers.py`, the function Hermes saves its trajectories
with: `<tool_call>` JSON in `gpt` turns, one `tool` turn of `<tool_response>`
JSON per call batch, `<think>` blocks). Its system turn is Hermes' tool-calling
prompt listing the tools the conversation calls, followed by the conversation's
own system prompt (tau-bench's airline policy).

    .venv/bin/python -m benchmarks.hermes_trajectories [OUT.jsonl]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from hermes_pipeline.formats import detect_format_in
from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.transcript import Conversation, message_text, role, tool_calls
from testkit.env import CORPUS, LONG_SESSIONS

MAX_RECORD = 64 << 20


def conversations(root: Path):
    for path in sorted(root.rglob("*.jsonl")):
        items = list(read_records(str(path), MAX_RECORD))
        found = detect_format_in(i.value for i in items if isinstance(i, Record))
        if found is None:
            continue
        fmt, layout = found
        yield from (c for c in fmt.read(iter(items), str(path), layout) if isinstance(c, Conversation))


def plain_messages(conversation: Conversation) -> tuple[str, list[dict]]:
    """(system prompt, the other messages as OpenAI messages with text content)."""
    system, out = [], []
    for message in conversation.messages:
        text = message_text(message)
        if role(message) == "system":
            system.append(text)
        elif role(message) == "tool":
            out.append({"role": "tool", "tool_call_id": str(message.get("tool_call_id") or ""), "content": text})
        elif role(message) == "assistant":
            calls = [{"id": c.get("id"), "type": "function", "function": {
                "name": c["function"]["name"], "arguments": c["function"].get("arguments") or "{}"}}
                for c in tool_calls(message) if isinstance(c.get("function"), dict)]
            out.append({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})})
        else:
            out.append({"role": "user", "content": text})
    return "\n\n".join(system), out


class _Tools:
    """What convert_to_trajectory_format asks of the agent: its tools, as the system prompt lists them."""

    def __init__(self, messages: list[dict]):
        names: dict[str, set] = {}
        for message in messages:
            for call in message.get("tool_calls", []):
                try:
                    arguments = json.loads(call["function"]["arguments"])
                except ValueError:
                    arguments = {}
                names.setdefault(call["function"]["name"], set()).update(
                    arguments if isinstance(arguments, dict) else {})
        self.tools = [{"name": name, "parameters": {"type": "object", "properties": {a: {} for a in sorted(args)}}}
                      for name, args in sorted(names.items())]

    def _format_tools_for_system_message(self) -> str:
        return json.dumps(self.tools, ensure_ascii=False)


def trajectory(conversation: Conversation) -> dict | None:
    from agent.agent_runtime_helpers import convert_to_trajectory_format
    system, messages = plain_messages(conversation)
    if not messages or messages[0]["role"] != "user":
        return None
    turns = convert_to_trajectory_format(_Tools(messages), messages, messages[0]["content"], True)
    if system:
        turns[0]["value"] += "\n\n" + system
    return {"id": conversation.id, "source": conversation.source, "conversations": turns,
            "model": "hermes-format", "completed": True}


def build(out: Path) -> Path:
    """Write the set (one trajectory a line); the same input always gives the same bytes."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as handle:
        for root in (CORPUS, LONG_SESSIONS):
            for conversation in conversations(root):
                entry = trajectory(conversation)
                if entry is not None:
                    handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return out


if __name__ == "__main__":
    from benchmarks.measure import DATA
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA / "hermes-trajectories.jsonl"))
