"""The run loop: input files -> conversations -> engine (on a runner) -> output tree + run folder.

It schedules and records; the engine transforms. Every input record ends up
exactly once in the manifest (of this run, or of the incremental run that
last did it), and either in the output tree or in `quarantine.jsonl`. Inputs
are only ever read. With incremental state, each conversation is committed
the moment it is done, before it is listed or written, so a run killed at any
point leaves nothing half-recorded.
"""
from __future__ import annotations

import hashlib
import itertools
import logging
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Iterator

from hermes_pipeline.engine.base import Compaction, ContextEngine
from hermes_pipeline.formats import CONVERSATION, TranscriptFormat, detect_format_in, get_format
from hermes_pipeline.inputs import InputFile
from hermes_pipeline.jsonl import (
    READ_CHUNK, Record, Rejected, dumps, quarantine_row, raw_for_quarantine, read_records, reject,
)
from hermes_pipeline.output_tree import FileSink, OutputTree
from hermes_pipeline.progress import Progress
from hermes_pipeline.repair import repair_tool_pairing
from hermes_pipeline.replay_run import replay_for_conversation
from hermes_pipeline.run_folder import RunFolder, RunTotals, conversation_row, problem_row
from hermes_pipeline.state import Item
from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.testing.faults import checkpoint
from hermes_pipeline.transcript import Conversation

log = logging.getLogger(__name__)
DETECT_WINDOW = 50          # records read ahead to find one that shows the format ...
DETECT_BYTES = 4 << 20      # ... or fewer, once this much input is held: memory follows a conversation, not a file


@dataclass(frozen=True)
class RunOptions:
    input_format: str = "auto"
    output_format: str = "same"
    max_record_bytes: int = 64 << 20
    progress: str = "auto"
    engine_fallback: str | None = None   # why the configured engine is not the one running
    replay: Any = None                   # ReplaySettings: each row gets the live agent's bill (replay_run.py)
    prune_removed: bool = False          # incremental.prune: delete outputs whose input is gone


@dataclass(frozen=True)
class Failure:
    """Why one conversation could not be compacted (a plain value: it may cross processes)."""
    reason: str


@dataclass(frozen=True)
class Reused:
    """A conversation the output tree already holds, as it would be written again."""
    found: Item


def reusable(found: Item) -> bool:
    """Done before and done well: failures and fallbacks from a configured model are tried again."""
    row = found.manifest_row or {}
    fell_back = bool(row.get("fallback")) and row.get("summarizer") == "extractive"
    return found.status in ("compacted", "unchanged", "quarantined") and not fell_back


def needs_engine(item: Any) -> bool:
    return isinstance(item, Conversation)


def compact_one(engine: ContextEngine | None, item: Conversation | Rejected | Reused) -> tuple:
    """(item, Compaction | Failure | None, seconds); the conversation is not changed.

    The conversation comes back too: a worker may have repaired its tool pairing.
    """
    if not isinstance(item, Conversation):
        return item, None, 0.0
    started = time.perf_counter()
    try:
        item = repair_tool_pairing(item)
        result = engine.compress(item)
    except SummarizerFatalError:
        raise
    except Exception as error:   # one bad conversation (or plugin) never stops the run
        log.error("conversation %s (%s) failed: %s: %s", item.id, item.source, type(error).__name__, error)
        log.debug("traceback of %s", item.source, exc_info=True)
        return item, Failure(f"{type(error).__name__}: {error}"), 0.0
    return item, result, time.perf_counter() - started


def compact_and_bill(replay: Any, engine: ContextEngine | None, item: Any) -> tuple:
    """compact_one, plus the replayed bill of the conversation (computed where the compaction ran:
    on a worker, not in the process that keeps the order and writes)."""
    item, result, seconds = compact_one(engine, item)
    bill = None
    if replay is not None and isinstance(result, Compaction):
        bill = replay_for_conversation(item.messages, result.counts, replay)
    return item, result, seconds, bill


def _drained(queue: deque) -> Iterator:
    while queue:
        yield queue.popleft()


def file_digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Executor:
    def __init__(self, runner, folder: RunFolder, tree: OutputTree, options: RunOptions,
                 stop: threading.Event | None = None):
        self.runner, self.folder, self.tree, self.options = runner, folder, tree, options
        self.state = tree.state
        self.stop = stop or threading.Event()
        self.totals = RunTotals()

    def run(self, inputs: list[InputFile]) -> RunTotals:
        sizes = {f.path: f.path.stat().st_size for f in inputs}
        with Progress(self.options.progress, sum(sizes.values())) as progress:
            self.progress = progress
            try:
                for input_file in inputs:
                    if self.stop.is_set():
                        break
                    checkpoint("file")
                    self._run_file(input_file)
                    self.totals.bytes_in += sizes[input_file.path]
            except SummarizerFatalError as error:
                self.totals.stopped = str(error)
                log.error("run stopped: %s", error)
            finally:
                self.folder.close()
        self.totals.interrupted = self.stop.is_set()
        if self.totals.status == "complete":
            files, conversations = self.tree.removed_files({f.relative.as_posix() for f in inputs},
                                                           self.options.prune_removed)
            self.totals.removed_files, self.totals.removed = files, self.totals.removed + conversations
        return self.totals

    # -- one file ------------------------------------------------------------

    def _run_file(self, input_file: InputFile) -> None:
        rel, stat = input_file.relative.as_posix(), input_file.path.stat()
        if self.state is not None:
            unchanged = self.state.file_unchanged(rel, stat, self.tree.path_for(input_file.relative))
            if unchanged is not None:       # size, mtime, config and output all as last written
                self.totals.skipped_unchanged += unchanged
                self.totals.files += 1
                self.progress.advance(stat.st_size)
                return
        sink = self.tree.sink(input_file.relative)
        self.keys: deque[str] = deque()
        self.items = 0
        self.retry_later = False
        try:
            complete = self._read_file(input_file, rel, sink)
        except SummarizerFatalError:
            sink.finish(complete=False)     # what is complete stays: the manifest already lists it
            raise
        except BaseException:
            sink.writer.abort()
            raise
        out_size = sink.finish(complete)
        self.totals.bytes_out += out_size or 0
        self.totals.files += complete
        if complete and self.state is not None:
            # a file with a conversation to try again (a fallback, a failure) is never skipped whole
            self.totals.removed += self.state.file_done(rel, stat, out_size, self.items,
                                                        skippable=not self.retry_later)

    def _read_file(self, input_file: InputFile, rel: str, sink: FileSink) -> bool:
        """True when every record of the file was done (not cut short by a stop)."""
        path = str(input_file.path)
        items = self._counted(read_records(path, self.options.max_record_bytes))
        fmt, layout, items = self._detect(path, items)
        if fmt is None:
            return self._unknown_format(path, rel, items)
        out_fmt, out_layout = self._output_format(fmt, layout)
        whole_file = "file:" + file_digest(input_file.path) if layout != CONVERSATION and self.state else None
        work = self._keyed(fmt.read(items, path, layout), rel, whole_file)
        compact = partial(compact_and_bill, self.options.replay)
        for item, result, seconds, bill in self.runner.map(compact, work, needs_engine):
            key = self.keys.popleft()
            if isinstance(item, Reused):
                self._reuse(rel, key, item.found, sink)
            elif isinstance(item, Rejected):
                self._quarantine(rel, key, item)
            elif isinstance(result, Failure):
                self._failed(rel, key, item, fmt, layout, f"compaction failed: {result.reason}")
            else:
                self._written(rel, key, item, result, seconds, bill, out_fmt, out_layout, sink, fmt, layout)
        return not self.cut_short

    def _keyed(self, items: Iterator, rel: str, whole_file: str | None) -> Iterator:
        """Each item with its state key queued (results come back in this order); reused ones replaced;
        stops taking new items once a stop is asked for."""
        occurrences: Counter = Counter()
        self.cut_short = False
        for item in items:
            if self.stop.is_set():
                self.cut_short = True
                return
            key = whole_file if isinstance(item, Conversation) and whole_file else None
            if key is None:
                digest = item.digest
                key = f"{digest}:{occurrences[digest]}"
                occurrences[digest] += 1
            self.keys.append(key)
            self.items += 1
            found = self.state.item(rel, key) if self.state is not None else None
            yield Reused(found) if found is not None and reusable(found) else item

    def _unknown_format(self, path: str, rel: str, items) -> bool:
        reason = "unknown transcript format (no record matched any known format)"
        rejected = (item if isinstance(item, Rejected) else reject(item, reason) for item in items)
        for item in self._keyed(rejected, rel, None):
            key = self.keys.popleft()
            if isinstance(item, Reused):
                self._reuse(rel, key, item.found, None)
            else:
                self._quarantine(rel, key, item)
        if self.items == 0:
            self.items += 1
            self._quarantine(rel, "empty", Rejected(path, 0, "empty file: no records"))
        return not self.cut_short

    def _counted(self, items: Iterator[Record | Rejected]) -> Iterator[Record | Rejected]:
        for item in items:
            if isinstance(item, Record):
                self.progress.advance(item.raw_size)
            yield item

    def _detect(self, path: str, items):
        """The format and layout of a file, from its first records (one line may not tell)."""
        head: deque = deque()
        held = 0
        for item in items:
            head.append(item)
            held += item.raw_size if isinstance(item, Record) else 0
            if len(head) >= DETECT_WINDOW or held >= DETECT_BYTES:
                break
        values = [i.value for i in head if isinstance(i, Record)]
        rest = itertools.chain(_drained(head), items)   # each record let go as soon as it is passed on
        if self.options.input_format != "auto":
            fmt = get_format(self.options.input_format)
            layout = next(filter(None, map(fmt.detect, values)), None) or CONVERSATION
            return fmt, layout, rest
        found = detect_format_in(values)
        return (found[0], found[1], rest) if found else (None, None, rest)

    def _output_format(self, fmt: TranscriptFormat, layout: str) -> tuple[TranscriptFormat, str]:
        if self.options.output_format not in ("same", fmt.name):
            return get_format(self.options.output_format), CONVERSATION
        if fmt.write_as:   # read-only logs are written in another format, one conversation per line
            return get_format(fmt.write_as), CONVERSATION
        return fmt, layout

    # -- records: committed first, then listed, then written ---------------------

    def _commit(self, rel: str, key: str, status: str, output: bytes | None, row: dict, qrow: dict | None) -> None:
        if self.state is not None:
            self.state.commit(rel, key, status, output, row, qrow)
            self.retry_later |= not reusable(Item(status, output, row, qrow))

    def _reuse(self, rel: str, key: str, found: Item, sink: FileSink | None) -> None:
        if found.output:
            sink.write(found.output)
        self.state.seen(rel, key)
        self.totals.skipped_unchanged += 1

    def _written(self, rel, key, item: Conversation, result: Compaction, seconds: float, bill: dict | None,
                 out_fmt, out_layout, sink: FileSink, fmt, layout) -> None:
        try:
            data = b"".join(dumps(v) + b"\n" for v in out_fmt.write(replace(item, messages=result.messages),
                                                                        out_layout))
        except Exception as error:   # a writer bug costs this conversation, not the run
            log.exception("conversation %s (%s) could not be written", item.id, item.source)
            self._failed(rel, key, item, fmt, layout, f"writing failed: {type(error).__name__}: {error}")
            return
        row = conversation_row(item, len(result.messages), result.outcome, seconds, self.options.engine_fallback)
        if bill is not None:
            row["replay"] = bill
        self._commit(rel, key, row["status"], data, row, None)
        checkpoint("committed")
        self._row(row)
        checkpoint("listed")
        sink.write(data)

    def _quarantine(self, rel: str, key: str, item: Rejected) -> None:
        reason = f"{item.source}: {item.reason}"
        fields = {"source": item.source, "reason": reason}
        qrow = quarantine_row(fields, item)
        row = problem_row(item.source, "quarantined", reason)
        self._commit(rel, key, "quarantined", None, row, qrow or {**fields, "raw_bytes": item.span[1]})
        if qrow is not None:
            self.folder.quarantine.write(qrow)
        else:                        # too long to hold: copied from the input in chunks
            self.folder.quarantine_rejected(fields, item)
        self._row(row)

    def _failed(self, rel: str, key: str, conversation: Conversation, fmt, layout, why: str) -> None:
        reason = f"{conversation.source}: {why}"
        try:
            raw = b"\n".join(dumps(v) for v in fmt.write(conversation, layout))
        except Exception:        # kept as read when its format can't write it
            raw = dumps({"id": conversation.id, "messages": conversation.messages})
        qrow = {"source": conversation.source, "reason": reason, **raw_for_quarantine(raw)}
        row = problem_row(conversation.source, "failed", reason, conversation.id, len(conversation.messages))
        row["stats"] = dict(conversation.stats)    # e.g. how many input lines the conversation was read from
        self._commit(rel, key, "failed", None, row, qrow)
        self.folder.quarantine.write(qrow)
        self._row(row)

    def _row(self, row: dict) -> None:
        self.folder.manifest.write(row)
        self.totals.add(row)
        self.progress.note(row["status"])
