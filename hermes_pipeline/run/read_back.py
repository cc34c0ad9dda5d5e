"""A run's conversations read again: before (from its input, as the run read it) and after (from what it
wrote). What hermes-pipeline-show shows, and what the exam examines."""
from __future__ import annotations

from pathlib import Path

from hermes_pipeline.formats import get_format
from hermes_pipeline.formats.file_conversations import NotFound, read_conversations
from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.run.work_stream import output_format
from hermes_pipeline.transcript import Conversation


def conversation_before(source: str, input_format: str) -> Conversation:
    """The conversation at `source` (FILE:LINE) as the engine saw it: read, then repaired (the positions of
    a row's removed_span are of this)."""
    path, line = source.rsplit(":", 1)
    if not Path(path).is_file():
        raise NotFound(f"the input {path} is gone (or this runs from another folder than the run)")
    found = [c for c in read_conversations(Path(path), input_format, line=int(line)) if c.source == source]
    if not found:
        raise NotFound(f"{source}: no conversation there now (the input changed since the run?)")
    return repair_tool_pairing(found[0])


def conversation_after(conversation: Conversation, out_path: Path, wanted_format: str,
                       input_format: str = "auto") -> list[dict]:
    """The messages the run wrote for `conversation` in `out_path` (read back as its agent would load them)."""
    if not out_path.is_file():
        raise NotFound(f"the output of {conversation.source} is not at {out_path} any more")
    fmt, layout = output_format(get_format(conversation.format), conversation.layout, wanted_format)
    same_id = [c for c in read_conversations(out_path, fmt.name, layout) if c.id == conversation.id]
    nth = 0
    if len(same_id) > 1:        # the output keeps the input's order: the same place among those of its id
        source = Path(conversation.source.rsplit(":", 1)[0])
        before_it = [c for c in read_conversations(source, input_format) if c.id == conversation.id]
        nth = next((k for k, c in enumerate(before_it) if c.source == conversation.source), 0)
    if nth >= len(same_id):
        raise NotFound(f"{out_path} has no conversation {conversation.id!r} (written by a later run?)")
    return same_id[nth].messages
