"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): the history Codex would send next.

Each line is `{"timestamp", "type", "payload"}` (newer versions add an
`ordinal`; learnt from openai/codex `codex-rs/core/src/rollout/` and by running
the CLI). `response_item` payloads are the Responses API items in order; a
`compacted` line replaces everything before it with its `replacement_history`
(one without it, from older versions, makes Codex rebuild the history: the
items before the first user turn, the user messages, then the summary
`message`); `event_msg` `thread_rolled_back` drops the last N user turns;
`event_msg` `token_count` is the API usage of a request. `session_meta` carries
the base instructions Codex sends before the history. Other lines
(`turn_context`, `world_state`, ...) do not change the history.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

ENVELOPES = ("session_meta", "response_item", "compacted", "event_msg", "turn_context", "world_state",
             "token_usage_record")
# Codex's own summary message starts with this (codex-rs/core/templates/compact/summary_prefix.md)
CODEX_SUMMARY_PREFIX = "Another language model started to solve this problem and produced a summary"
# user-role items Codex injects itself (environment, AGENTS.md, skills...): not turns the user typed
CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
                    "<user_shell_command>", "<turn_aborted>", "<subagent_notification>", "<skill>",
                    "<skills_instructions>", "<permissions instructions>", "<collaboration_mode>")
USER_MESSAGES_TOKENS = 20_000   # what Codex keeps of the user messages when it rebuilds after a summary


def item_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content or () if isinstance(part, dict)
                     and isinstance(part.get("text"), str))


def is_context_message(item: dict) -> bool:
    """A message Codex wrote for the model (instructions, environment), not a turn of the conversation."""
    if item.get("type") != "message":
        return False
    if item.get("role") in ("developer", "system"):
        return True
    return item.get("role") == "user" and item_text(item).lstrip().startswith(CONTEXT_PREFIXES)


def is_codex_summary(item: dict) -> bool:
    return item.get("type") == "message" and item.get("role") == "user" \
        and item_text(item).lstrip().startswith(CODEX_SUMMARY_PREFIX)


def is_user_turn(item: dict) -> bool:
    """A message the user typed: where a turn starts (rollbacks count these)."""
    return item.get("type") == "message" and item.get("role") == "user" \
        and not is_context_message(item) and not is_codex_summary(item)


@dataclass
class Rollout:
    meta: dict = field(default_factory=dict)        # session_meta payload
    history: list[dict] = field(default_factory=list)   # response items Codex would send next
    compactions: int = 0
    rollbacks: int = 0
    usage: dict | None = None       # the newest token_count's last_token_usage for this history
    model: str | None = None        # of the newest turn_context
    ignored_lines: int = 0          # lines of a kind that does not change the history

    @property
    def base_instructions(self) -> str | None:
        found = self.meta.get("base_instructions")
        if isinstance(found, dict):
            found = found.get("text")
        if not isinstance(found, str):
            found = self.meta.get("instructions")
        return found if isinstance(found, str) and found else None


def _rebuilt(history: list[dict], summary: str) -> list[dict]:
    """What Codex makes of a `compacted` line without replacement_history."""
    first_turn = next((i for i, item in enumerate(history) if is_user_turn(item)), len(history))
    kept, left = [], USER_MESSAGES_TOKENS * 4      # Codex counts about 4 bytes a token
    for item in reversed([i for i in history if is_user_turn(i)]):
        if left <= 0:
            break
        text = item_text(item)[-left:]
        kept.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        left -= len(text)
    summary_item = {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": summary or "(no summary available)"}]}
    return history[:first_turn] + kept[::-1] + [summary_item]


def _rolled_back(history: list[dict], turns: int) -> list[dict]:
    starts = [i for i, item in enumerate(history) if is_user_turn(item)]
    if turns <= 0 or not starts:
        return history
    return history[:starts[0] if turns >= len(starts) else starts[-turns]]


def replay(lines: Iterable[dict]) -> Rollout:
    """The rollout's current state, from its parsed lines in file order."""
    rollout = Rollout()
    for line in lines:
        kind, payload = line.get("type"), line.get("payload")
        if kind == "response_item":
            rollout.history.append(payload)
        elif kind == "compacted":
            replacement = payload.get("replacement_history")
            rollout.history = list(replacement) if isinstance(replacement, list) \
                else _rebuilt(rollout.history, str(payload.get("message") or ""))
            rollout.compactions += 1
            rollout.usage = None        # the usage seen so far was of the history just replaced
        elif kind == "event_msg" and payload.get("type") == "thread_rolled_back":
            rollout.history = _rolled_back(rollout.history, int(payload.get("num_turns") or 0))
            rollout.rollbacks += 1
            rollout.usage = None
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
                rollout.usage = info["last_token_usage"]
        elif kind == "session_meta" and not rollout.meta:
            rollout.meta = payload
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            rollout.model = payload["model"]
        else:
            rollout.ignored_lines += kind not in ENVELOPES
    return rollout


def context_tokens(usage: Any) -> int | None:
    """The size of the history after that request: its input (cached part included) and its output."""
    if not isinstance(usage, dict) or not isinstance(usage.get("input_tokens"), int):
        return None
    output = usage.get("output_tokens")
    return usage["input_tokens"] + (output if isinstance(output, int) else 0)


def line_problem(value: Any) -> str | None:
    """Why a line can't be part of a rollout, or None."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return "record is not a Codex rollout line (an object with a string 'type')"
    kind, payload = value["type"], value.get("payload")
    if kind in ("response_item", "compacted", "event_msg", "session_meta", "turn_context") \
            and not isinstance(payload, dict):
        return f"{kind} line has no 'payload' object"
    if kind == "response_item":
        return item_problem(payload, "response_item")
    if kind == "compacted":
        replacement = payload.get("replacement_history")
        if replacement is not None and not isinstance(replacement, list):
            return "compacted line: replacement_history is not a list"
        for j, item in enumerate(replacement or ()):
            problem = item_problem(item, f"compacted line: replacement_history item {j}")
            if problem:
                return problem
    return None


def item_problem(item: Any, where: str) -> str | None:
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        return f"{where} is not an item object with a string 'type'"
    if item["type"] == "message":
        if not isinstance(item.get("role"), str):
            return f"{where} is a message without a string 'role'"
        content = item.get("content")
        if not isinstance(content, (list, str)):
            return f"{where} message content is a {type(content).__name__} (expected a list of parts)"
    if item["type"] in ("function_call", "custom_tool_call", "function_call_output", "custom_tool_call_output") \
            and not isinstance(item.get("call_id"), str):
        return f"{where} is a {item['type']} without a string 'call_id'"
    return None
