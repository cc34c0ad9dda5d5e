"""What happens to one conversation, wherever it runs (this process, a worker process, a Dask worker).

Repair, compress, write out in the output format, make its manifest row and
its replayed bill: all of it next to the compaction, so that only a row and
bytes travel back to the process that keeps the order and writes.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from hermes_pipeline.cost.replay_rows import replay_for_conversation
from hermes_pipeline.engine.base import ContextEngine
from hermes_pipeline.formats import get_format
from hermes_pipeline.formats.base import WriteOptions, Written
from hermes_pipeline.inputs.jsonl import dumps, encode_lines, raw_for_quarantine
from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.run.run_folder import conversation_row, problem_row
from hermes_pipeline.run.work_stream import Deferred, output_format
from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.transcript import Conversation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecordOptions:
    """What a worker needs to know besides its engine (a plain value: it crosses processes)."""
    output_format: str = "same"
    engine_fallback: str | None = None   # why the configured engine is not the one running
    replay: Any = None                   # ReplaySettings, or None
    native: WriteOptions = WriteOptions()   # how agents' own session formats are written (output.native)


@dataclass(frozen=True)
class Done:
    """One conversation, ready to record: its manifest row, and its output lines or its quarantine row."""
    row: dict
    data: bytes | None = None
    quarantine: dict | None = None
    done_as: str | None = None     # the input as this output leaves it (a store written in place): done too


def needs_engine(item: Any) -> bool:
    return isinstance(item, (Conversation, Deferred))


def compact_conversation(options: RecordOptions, engine: ContextEngine | None, item: Any) -> Any:
    """A Done for a conversation; anything else (a marker, a rejected line, a reused one) as it is."""
    parse_started = time.thread_time()       # CPU of this thread: each conversation is charged its own
    if isinstance(item, Deferred):
        item = item.read()      # a line parsed here, next to its compaction (a worker, with workers)
    if not isinstance(item, Conversation):
        return item
    started = time.perf_counter()
    as_read = item.messages
    try:
        item = repair_tool_pairing(item)
        engine_started = time.thread_time()
        cpu = {"parse": {"seconds": engine_started - parse_started}}
        result = engine.compress(item)
    except SummarizerFatalError:
        raise
    except Exception as error:   # one bad conversation (or plugin) never stops the run
        log.error("conversation %s (%s) failed: %s: %s", item.id, item.source, type(error).__name__, error)
        log.debug("traceback of %s", item.source, exc_info=True)
        return failed(item, f"compaction failed: {type(error).__name__}: {error}")
    seconds = time.perf_counter() - started
    # the compressor reports each stage and its plan; an engine that reports nothing is charged as a whole
    cpu.update(result.outcome.stages or {"engine": {"seconds": time.thread_time() - engine_started}})
    write_started = time.thread_time()
    out_fmt, out_layout = output_format(get_format(item.format), item.layout, options.output_format)
    try:
        data = _as_it_was(item, as_read, result.messages, out_fmt.name, out_layout)
        if data is not None:
            written = Written([])
        else:
            written = out_fmt.write_compacted(item, result, out_layout, options.native)
            data = encode_lines(written.values)
    except Exception as error:   # a writer bug costs this conversation, not the run
        log.exception("conversation %s (%s) could not be written", item.id, item.source)
        return failed(item, f"writing failed: {type(error).__name__}: {error}")
    cpu["write"] = {"seconds": time.thread_time() - write_started}
    replay = None
    if options.replay is not None:
        replay_started = time.thread_time()
        replay = replay_for_conversation(item.messages, result.counts, options.replay)
        cpu["replay"] = {"seconds": time.thread_time() - replay_started}
    row = conversation_row(item, len(result.messages), result.outcome, seconds, options.engine_fallback, cpu)
    if written.row:
        row["native"] = written.row
    if replay is not None:
        row["replay"] = replay
    return Done(row, data, done_as=written.done_as)


def _as_it_was(item: Conversation, as_read: list[dict], messages: list[dict], out_format: str,
               out_layout: str) -> bytes | None:
    """An unchanged conversation written in its own format: the bytes it was read from (its line or JSON
    document element, or each record of a one-conversation file), byte for byte; None when it changed."""
    records = [item.raw_line] if item.raw_line is not None else item.records_as_read
    if records is None or item.notes or out_format != item.format or out_layout != item.layout \
            or not (messages is as_read or messages == as_read):
        return None
    return b"".join(raw if raw.endswith(b"\n") else raw + b"\n" for raw in records)


def failed(conversation: Conversation, why: str) -> Done:
    """A conversation that could not be done: quarantined as read (its own format when it can be written)."""
    reason = f"{conversation.source}: {why}"
    try:
        raw = encode_lines(get_format(conversation.format).write(conversation, conversation.layout))[:-1]
    except Exception:        # kept as read when its format can't write it
        raw = dumps({"id": conversation.id, "messages": conversation.messages})
    row = problem_row(conversation.source, "failed", reason, conversation.id, len(conversation.messages))
    row["stats"] = dict(conversation.stats)    # e.g. how many input lines the conversation was read from
    return Done(row, quarantine={"source": conversation.source, "reason": reason, **raw_for_quarantine(raw)})
