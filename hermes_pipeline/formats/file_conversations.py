"""The conversations of a file, read as a run reads it: its format detected on its first records."""
from __future__ import annotations

from pathlib import Path

from hermes_pipeline.formats import CONVERSATION, detect_format_in, get_format
from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.transcript import Conversation


class NotFound(Exception):
    """What is not there (any more), in words."""


def read_conversations(path: Path, fmt_name: str | None, layout: str | None = None,
                       line: int | None = None) -> list[Conversation]:
    """The conversations of a file, read as a run reads it (format detected on its first records)."""
    items = list(read_records(str(path), 1 << 40))
    values = [i.value for i in items[:64] if isinstance(i, Record)]
    fmt = get_format(fmt_name) if fmt_name not in (None, "auto") else None
    found = (fmt, next(filter(None, map(fmt.detect, values)), None) or CONVERSATION) if fmt else \
        detect_format_in(values)
    if found is None:
        raise NotFound(f"{path}: no transcript format recognised")
    fmt, detected = found
    layout = layout or detected
    if line is not None and layout == CONVERSATION:    # one conversation per line: only its line
        items = [i for i in items if i.line_no == line]
    return [c for c in fmt.read(iter(items), str(path), layout) if isinstance(c, Conversation)]
