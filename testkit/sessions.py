"""Real sessions read the way a run reads them, compacted in-process with their quality score."""
from __future__ import annotations

from pathlib import Path

from hermes_pipeline.analysis.score import compaction_bounds
from hermes_pipeline.formats import detect_format_in
from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.transcript import Conversation
from testkit.builders import compose_config


def make_engine(context_length: int, *overrides: str):
    from hermes_pipeline.components import build
    return build(compose_config("input.path=samples", f"model.context_length={context_length}", *overrides)).engine


def read_conversations(path: Path, repaired: bool = True) -> list[Conversation]:
    """The conversations of one file, format detected (and tool pairs repaired), as a run reads them."""
    items = list(read_records(str(path), 64 << 20))
    found = detect_format_in(i.value for i in items[:50] if isinstance(i, Record))
    if found is None:
        return []
    fmt, layout = found
    read = [c for c in fmt.read(iter(items), str(path), layout) if isinstance(c, Conversation)]
    return [repair_tool_pairing(c) for c in read] if repaired else read


def string_leaves(value, out: list[str]) -> list[str]:
    """Every string in a JSON value, keys included, into `out`."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            out.append(key)
            string_leaves(item, out)
    elif isinstance(value, list):
        for item in value:
            string_leaves(item, out)
    return out


def measure(engine, conversation: Conversation) -> dict | None:
    """The quality the run records for one compaction (its manifest `quality`), with the summary and
    its budget; None when the conversation was not compacted."""
    compaction = engine.compress(conversation)
    outcome = compaction.outcome
    if not outcome.compacted:
        return None
    head_end, tail_start = compaction_bounds(conversation.messages, compaction.messages)
    budget = engine.services.budgets.summary_tokens(sum(compaction.counts[head_end:tail_start]))
    return {**outcome.quality, "id": conversation.id, "summary_tokens": outcome.summary_tokens, "budget": budget,
            "summary": outcome.summary.text if outcome.summary else "", "compaction": compaction,
            "bounds": (head_end, tail_start)}
