"""Input checks that run before the engine: repair what is safe, refuse what is not."""
from __future__ import annotations

from hermes_pipeline.stages.assemble import sanitize_tool_pairs
from hermes_pipeline.transcript import Conversation


class InputProblem(Exception):
    """A conversation that can't be compacted as it is; it goes to quarantine."""


def repair_tool_pairing(conversation: Conversation) -> str | None:
    """Give tool calls without a result a stub (noted); refuse results without a call.

    A stub only adds a message, so it is safe. Dropping an orphan result would
    lose what it says, so such a conversation is quarantined instead.
    """
    counts: dict[str, int] = {}
    fixed = sanitize_tool_pairs(conversation.messages, lambda key: counts.__setitem__(key, counts.get(key, 0) + 1))
    if counts.get("orphan_results_dropped"):
        orphans = [i for i, m in enumerate(conversation.messages) if m.get("role") == "tool"
                   and not any(m is f for f in fixed)]
        return f"tool result without a matching call at message {orphans[0]} ({len(orphans)} in all)"
    stubs = counts.get("stub_results_added", 0)
    if stubs:
        conversation.messages = fixed
        conversation.notes.append(f"added {stubs} stub result(s) for tool calls that had none")
        conversation.stats["input_stub_results_added"] = stubs
    return None
