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
from dataclasses import dataclass
from functools import partial
from typing import Any

from hermes_pipeline.formats.base import WriteOptions
from hermes_pipeline.inputs.find import InputFile
from hermes_pipeline.inputs.jsonl import Rejected, quarantine_row
from hermes_pipeline.run.conversation_job import Done, RecordOptions, compact_conversation, needs_engine
from hermes_pipeline.run.fault_injection import fault_point
from hermes_pipeline.run.incremental import Item, reusable
from hermes_pipeline.run.output_tree import OutputTree
from hermes_pipeline.run.progress_bar import Progress
from hermes_pipeline.run.run_folder import RunFolder, RunTotals, left_as_it_is, own_cpu_seconds, problem_row, run_log
from hermes_pipeline.run.store_sink import LEFT, StoreSink
from hermes_pipeline.run.work_stream import FileEnd, FileSkipped, FileStart, FileWork, Reused, WorkStream
from hermes_pipeline.summarizers.base import SummarizerFatalError

log = logging.getLogger(__name__)
_END = object()


@dataclass(frozen=True)
class RunOptions:
    input_format: str = "auto"
    output_format: str = "same"
    max_record_bytes: int = 64 << 20
    progress: str = "auto"
    engine_fallback: str | None = None   # why the configured engine is not the one running
    replay: Any = None                   # ReplaySettings: each row gets the live agent's bill (cost/replay_rows.py)
    prune_removed: bool = False          # incremental.prune: delete outputs whose input is gone
    native: WriteOptions = WriteOptions()   # output.native: how agents' own session formats are written


class Executor:
    def __init__(self, runner, folder: RunFolder, tree: OutputTree, options: RunOptions,
                 stop: threading.Event | None = None, first=None):
        self.runner, self.folder, self.tree, self.options = runner, folder, tree, options
        self.first = first        # work before the run proper: batch mode's batches (run/batch_pass.py)
        self.state = tree.state
        self.stop = stop or threading.Event()
        self.totals = RunTotals()

    def run(self, inputs: list[InputFile]) -> RunTotals:
        # the process's CPU so far (imports, Hydra, building the run): the start of summary.json's `stages`
        self.totals.stages.add_seconds("start", own_cpu_seconds())
        sizes = sum(f.path.stat().st_size for f in inputs)
        with Progress(self.options.progress, sizes) as progress:
            self.progress = progress
            stream = WorkStream(inputs, self.tree, self.options, self.stop, progress)
            try:
                if self.first is not None:
                    started = time.thread_time()
                    self.first(inputs, self.tree, self.options, self.stop)
                    self.totals.stages.add_seconds("batch_pass", time.thread_time() - started)
                self._record_all(stream)
            except SummarizerFatalError as error:
                self.totals.stopped = str(error)
                log.error("run stopped: %s", error)
                self._abandon(stream, keep=True)
            except BaseException:
                self._abandon(stream, keep=False)
                raise
            finally:
                finish_started = time.thread_time()
                self.folder.close()
        self.totals.interrupted = self.stop.is_set()
        if self.totals.status == "complete":
            files, conversations = self.tree.removed_files({f.relative.as_posix() for f in inputs},
                                                           self.options.prune_removed)
            self.totals.removed_files, self.totals.removed = files, self.totals.removed + conversations
            self.totals.removed_outputs_deleted = bool(files) and self.options.prune_removed
            for rel in files:
                run_log.warning("%s: gone from the input; its output %s", rel,
                                "deleted (incremental.prune=true)" if self.options.prune_removed else
                                "kept, and reported again each run until incremental.prune=true")
        self.totals.stages.add_seconds("finish", time.thread_time() - finish_started)
        return self.totals

    def _record_all(self, stream: WorkStream) -> None:
        self._work: FileWork | None = None     # the file whose records come in now
        options = RecordOptions(self.options.output_format, self.options.engine_fallback, self.options.replay,
                                self.options.native)
        results = self.runner.map(partial(compact_conversation, options), self._timed(stream), needs_engine)
        for item in results:
            started = time.thread_time()
            self._record(item, stream)
            self.totals.stages.add_seconds("record", time.thread_time() - started)

    def _timed(self, stream: WorkStream):
        """The work stream, its CPU (reading and splitting the input, this thread) counted as `read`."""
        items = iter(stream)
        while True:
            started = time.thread_time()
            item = next(items, _END)
            self.totals.stages.add_seconds("read", time.thread_time() - started)
            if item is _END:
                return
            yield item

    def _record(self, item, stream: WorkStream) -> None:
        """One result in the run folder, the state and the output tree."""
        work = self._work
        if isinstance(item, FileSkipped):
            earlier = self.state.quarantined_items(item.work.rel)
            run_log.info("%s: unchanged since the last run, its %d record(s) kept%s", item.work.rel,
                         item.work.unchanged_items, f" ({earlier} of them quarantined earlier)" if earlier else "")
            self.totals.skipped_unchanged += item.work.unchanged_items
            self.totals.quarantined_earlier += earlier
            self.totals.files += 1
            self.totals.bytes_skipped += item.work.stat.st_size    # not read: no part of MB/s
        elif isinstance(item, FileStart):
            self._work = item.work
        elif isinstance(item, FileEnd):
            self._finish(item.work, stream)
        elif isinstance(item, Reused):
            self._reuse(work, work.keys.popleft(), item.found)
        elif isinstance(item, Rejected):
            self._quarantine(work, work.keys.popleft(), item)
        else:
            self._done(work, work.keys.popleft(), item)

    def _finish(self, work: FileWork, stream: WorkStream) -> None:
        stream.open.remove(work)
        complete = not work.cut_short
        out_size = work.sink.finish(complete)
        self.totals.bytes_out += out_size or 0
        self.totals.bytes_in += work.stat.st_size if complete else 0
        self.totals.files += complete
        done = ", ".join(f"{count} {status}" for status, count in sorted(work.statuses.items())) or "no records"
        run_log.info("%s: %s%s", work.rel, done, "" if complete else " (stopped before its end)")
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
        left = work.sink.write(found.output) if found.output else None
        if left:      # a store's session still held by a live Hermes: forgotten, so the next run does it
            work.retry_later = True
        else:
            self.state.seen(work.rel, key)
        self.totals.skipped_unchanged += 1
        self.totals.quarantined_earlier += found.status == "quarantined"
        work.statuses["left as it is" if left else "kept as last written"] += 1

    def _done(self, work: FileWork, key: str, done: Done) -> None:
        row = done.row
        self._commit(work, key, row["status"], done.data, row, done.quarantine)
        store = isinstance(work.sink, StoreSink)
        # a Hermes store's change is applied before it is listed: a live Hermes may hold the session
        left = work.sink.write(done.data) if store and done.data else None
        if left:      # not taken: listed as it is, and not done for the next run (not reusable)
            row = left_as_it_is(row, left)
            self._commit(work, key, LEFT, None, row, None)
        elif done.done_as is not None and self.state is not None:
            # the next run reads the input as this one wrote it: nothing new there, nothing to do
            self.state.commit(work.rel, done.done_as, "unchanged", None, None, None)
        fault_point("committed")
        if done.quarantine is not None:
            self.folder.quarantine.write(done.quarantine)
            run_log.warning("set aside (%s): %s", row["status"], row.get("error"))
        self._row(work, row)
        fault_point("listed")
        if done.data is not None and not store:
            work.sink.write(done.data)

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
        run_log.warning("quarantined: %s", reason)
        self._row(work, row)

    def _row(self, work: FileWork, row: dict) -> None:
        work.statuses[row["status"]] += 1
        self.folder.manifest.write(row)
        self.totals.add(row)
        self.progress.note(row["status"])
