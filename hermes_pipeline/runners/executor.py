"""The run loop: one stream of work over every input file -> engine (on a runner) -> output tree + run folder.

It schedules and records; the engine transforms. Every input record ends up
exactly once in the manifest (of this run, or of the incremental run that
last did it), and either in the output tree or in `quarantine.jsonl`. Inputs
are only ever read. With incremental state, each conversation is committed
the moment it is done, before it is listed or written, so a run killed at any
point leaves nothing half-recorded.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from hermes_pipeline.engine.base import Compaction, ContextEngine
from hermes_pipeline.inputs import InputFile
from hermes_pipeline.jsonl import Rejected, dumps, quarantine_row, raw_for_quarantine
from hermes_pipeline.output_tree import OutputTree
from hermes_pipeline.progress import Progress
from hermes_pipeline.repair import repair_tool_pairing
from hermes_pipeline.replay_run import replay_for_conversation
from hermes_pipeline.run_folder import RunFolder, RunTotals, conversation_row, problem_row
from hermes_pipeline.runners.work_stream import FileEnd, FileSkipped, FileStart, FileWork, Reused, WorkStream, \
    reusable
from hermes_pipeline.state import Item
from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.testing.faults import checkpoint
from hermes_pipeline.transcript import Conversation

log = logging.getLogger(__name__)


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


def needs_engine(item: Any) -> bool:
    return isinstance(item, Conversation)


def compact_one(engine: ContextEngine | None, item: Any) -> tuple:
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


class Executor:
    def __init__(self, runner, folder: RunFolder, tree: OutputTree, options: RunOptions,
                 stop: threading.Event | None = None):
        self.runner, self.folder, self.tree, self.options = runner, folder, tree, options
        self.state = tree.state
        self.stop = stop or threading.Event()
        self.totals = RunTotals()

    def run(self, inputs: list[InputFile]) -> RunTotals:
        sizes = sum(f.path.stat().st_size for f in inputs)
        with Progress(self.options.progress, sizes) as progress:
            self.progress = progress
            stream = WorkStream(inputs, self.tree, self.options, self.stop, progress)
            try:
                self._record_all(stream)
            except SummarizerFatalError as error:
                self.totals.stopped = str(error)
                log.error("run stopped: %s", error)
                self._abandon(stream, keep=True)
            except BaseException:
                self._abandon(stream, keep=False)
                raise
            finally:
                self.folder.close()
        self.totals.interrupted = self.stop.is_set()
        if self.totals.status == "complete":
            files, conversations = self.tree.removed_files({f.relative.as_posix() for f in inputs},
                                                           self.options.prune_removed)
            self.totals.removed_files, self.totals.removed = files, self.totals.removed + conversations
        return self.totals

    def _record_all(self, stream: WorkStream) -> None:
        work: FileWork | None = None
        compact = partial(compact_and_bill, self.options.replay)
        for item, result, seconds, bill in self.runner.map(compact, stream, needs_engine):
            if isinstance(item, FileSkipped):
                self.totals.skipped_unchanged += item.work.unchanged_items
                self.totals.files += 1
                self.totals.bytes_in += item.work.stat.st_size
            elif isinstance(item, FileStart):
                work = item.work
            elif isinstance(item, FileEnd):
                self._finish(item.work, stream)
            elif isinstance(item, Reused):
                self._reuse(work, work.keys.popleft(), item.found)
            elif isinstance(item, Rejected):
                self._quarantine(work, work.keys.popleft(), item)
            elif isinstance(result, Failure):
                self._failed(work, work.keys.popleft(), item, f"compaction failed: {result.reason}")
            else:
                self._written(work, work.keys.popleft(), item, result, seconds, bill)

    def _finish(self, work: FileWork, stream: WorkStream) -> None:
        stream.open.remove(work)
        complete = not work.cut_short
        out_size = work.sink.finish(complete)
        self.totals.bytes_out += out_size or 0
        self.totals.bytes_in += work.stat.st_size if complete else 0
        self.totals.files += complete
        if complete and self.state is not None:
            # a file with a conversation to try again (a fallback, a failure) is never skipped whole
            self.totals.removed += self.state.file_done(work.rel, work.stat, out_size, work.items,
                                                        skippable=not work.retry_later)

    def _abandon(self, stream: WorkStream, keep: bool) -> None:
        """Files the run did not finish: the one being recorded keeps what its manifest lists (when
        `keep`, in a run folder); the ones read ahead are discarded."""
        for index, work in enumerate(stream.open):
            if keep and index == 0:
                work.sink.finish(complete=False)
            else:
                work.sink.writer.abort()
        stream.open.clear()

    # -- records: committed first, then listed, then written ---------------------

    def _commit(self, work: FileWork, key: str, status: str, output: bytes | None, row: dict,
                qrow: dict | None) -> None:
        if self.state is not None:
            self.state.commit(work.rel, key, status, output, row, qrow)
            work.retry_later |= not reusable(Item(status, output, row, qrow))

    def _reuse(self, work: FileWork, key: str, found: Item) -> None:
        if found.output:
            work.sink.write(found.output)
        self.state.seen(work.rel, key)
        self.totals.skipped_unchanged += 1

    def _written(self, work: FileWork, key: str, item: Conversation, result: Compaction, seconds: float,
                 bill: dict | None) -> None:
        try:
            data = b"".join(dumps(v) + b"\n" for v in work.out_fmt.write(replace(item, messages=result.messages),
                                                                             work.out_layout))
        except Exception as error:   # a writer bug costs this conversation, not the run
            log.exception("conversation %s (%s) could not be written", item.id, item.source)
            self._failed(work, key, item, f"writing failed: {type(error).__name__}: {error}")
            return
        row = conversation_row(item, len(result.messages), result.outcome, seconds, self.options.engine_fallback)
        if bill is not None:
            row["replay"] = bill
        self._commit(work, key, row["status"], data, row, None)
        checkpoint("committed")
        self._row(row)
        checkpoint("listed")
        work.sink.write(data)

    def _quarantine(self, work: FileWork, key: str, item: Rejected) -> None:
        reason = f"{item.source}: {item.reason}"
        fields = {"source": item.source, "reason": reason}
        qrow = quarantine_row(fields, item)
        row = problem_row(item.source, "quarantined", reason)
        self._commit(work, key, "quarantined", None, row, qrow or {**fields, "raw_bytes": item.span[1]})
        if qrow is not None:
            self.folder.quarantine.write(qrow)
        else:                        # too long to hold: copied from the input in chunks
            self.folder.quarantine_rejected(fields, item)
        self._row(row)

    def _failed(self, work: FileWork, key: str, conversation: Conversation, why: str) -> None:
        reason = f"{conversation.source}: {why}"
        try:
            raw = b"\n".join(dumps(v) for v in work.fmt.write(conversation, work.layout))
        except Exception:        # kept as read when its format can't write it
            raw = dumps({"id": conversation.id, "messages": conversation.messages})
        qrow = {"source": conversation.source, "reason": reason, **raw_for_quarantine(raw)}
        row = problem_row(conversation.source, "failed", reason, conversation.id, len(conversation.messages))
        row["stats"] = dict(conversation.stats)    # e.g. how many input lines the conversation was read from
        self._commit(work, key, "failed", None, row, qrow)
        self.folder.quarantine.write(qrow)
        self._row(row)

    def _row(self, row: dict) -> None:
        self.folder.manifest.write(row)
        self.totals.add(row)
        self.progress.note(row["status"])
