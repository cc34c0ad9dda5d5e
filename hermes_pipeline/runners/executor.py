"""The run loop: input files -> conversations -> engine (on a runner) -> run folder.

It schedules and records; the engine transforms. Every input record ends up
exactly once in the manifest, and either in the output tree or in
`quarantine.jsonl`. Inputs are only ever read.
"""
from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from hermes_pipeline.engine.base import Compaction, ContextEngine
from hermes_pipeline.formats import CONVERSATION, TranscriptFormat, detect_format_in, get_format
from hermes_pipeline.inputs import InputFile
from hermes_pipeline.jsonl import (
    AtomicJsonlWriter, JsonlLog, Record, Rejected, dumps, raw_for_quarantine, read_records, reject,
)
from hermes_pipeline.progress import Progress
from hermes_pipeline.repair import repair_tool_pairing
from hermes_pipeline.replay_run import replay_for_conversation
from hermes_pipeline.run_folder import RunTotals, conversation_row, problem_row
from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.transcript import Conversation

log = logging.getLogger(__name__)
DETECT_WINDOW = 50   # records read ahead to find one that shows the format


@dataclass(frozen=True)
class RunOptions:
    input_format: str = "auto"
    output_format: str = "same"
    max_record_bytes: int = 64 << 20
    progress: str = "auto"
    engine_fallback: str | None = None   # why the configured engine is not the one running
    replay: Any = None                   # ReplaySettings: each row gets the live agent's bill (replay_run.py)


@dataclass(frozen=True)
class Failure:
    """Why one conversation could not be compacted (a plain value: it may cross processes)."""
    reason: str


def compact_one(engine: ContextEngine, item: Conversation | Rejected) -> tuple:
    """(conversation as compacted, Compaction | Failure | None, seconds); the input is not changed.

    The conversation comes back too: a worker may have repaired its tool pairing.
    """
    if isinstance(item, Rejected):
        return item, None, 0.0
    started = time.perf_counter()
    try:
        item = repair_tool_pairing(item)
        result = engine.compress(item)
    except SummarizerFatalError:
        raise
    except Exception as error:   # one bad conversation (or plugin) never stops the run
        log.exception("conversation %s (%s) failed", item.id, item.source)
        return item, Failure(f"{type(error).__name__}: {error}"), 0.0
    return item, result, time.perf_counter() - started


class Executor:
    def __init__(self, runner, run_dir: Path, options: RunOptions):
        self.runner = runner
        self.run_dir = run_dir
        self.options = options
        self.totals = RunTotals()
        (run_dir / "transcripts").mkdir(parents=True, exist_ok=True)
        self.manifest = JsonlLog(run_dir / "manifest.jsonl")
        self.quarantine = JsonlLog(run_dir / "quarantine.jsonl")

    def run(self, inputs: list[InputFile]) -> RunTotals:
        sizes = {f.path: f.path.stat().st_size for f in inputs}
        with Progress(self.options.progress, sum(sizes.values())) as progress:
            self.progress = progress
            try:
                for input_file in inputs:
                    self._run_file(input_file)
                    self.totals.files += 1
                    self.totals.bytes_in += sizes[input_file.path]
            except SummarizerFatalError as error:
                self.totals.stopped = str(error)
                log.error("run stopped: %s", error)
            finally:
                self.manifest.close()
                self.quarantine.close()
        return self.totals

    # -- one file ------------------------------------------------------------

    def _run_file(self, input_file: InputFile) -> None:
        path = str(input_file.path)
        items = self._counted(read_records(path, self.options.max_record_bytes))
        fmt, layout, items = self._detect(path, items)
        if fmt is None:
            seen = False
            for item in items:
                seen = True
                reason = "unknown transcript format (no record matched any known format)"
                self._quarantine(item if isinstance(item, Rejected) else reject(item, reason))
            if not seen:
                self._quarantine(Rejected(path, 0, "empty file: no records"))
            return
        out_fmt, out_layout = self._output_format(fmt, layout)
        writer = AtomicJsonlWriter(self.run_dir / "transcripts" / input_file.relative)
        written = 0
        try:
            conversations = fmt.read(items, path, layout)
            for item, result, seconds in self.runner.map(compact_one, conversations):
                if isinstance(item, Rejected):
                    self._quarantine(item)
                elif isinstance(result, Failure):
                    self._failed(item, fmt, layout, f"compaction failed: {result.reason}")
                elif self._write(item, result, seconds, out_fmt, out_layout, writer, fmt, layout):
                    written += 1
        except SummarizerFatalError:
            self._finish(writer, written)   # what is complete stays: the manifest already lists it
            raise
        except BaseException:
            writer.abort()
            raise
        self._finish(writer, written)

    def _write(self, item: Conversation, result: Compaction, seconds: float, out_fmt: TranscriptFormat,
               out_layout: str, writer: AtomicJsonlWriter, fmt: TranscriptFormat, layout: str) -> bool:
        try:
            values = list(out_fmt.write(replace(item, messages=result.messages), out_layout))
        except Exception as error:   # a writer bug costs this conversation, not the run
            log.exception("conversation %s (%s) could not be written", item.id, item.source)
            self._failed(item, fmt, layout, f"writing failed: {type(error).__name__}: {error}")
            return False
        row = conversation_row(item, len(result.messages), result.outcome, seconds, self.options.engine_fallback)
        if self.options.replay is not None:
            row["replay"] = replay_for_conversation(item.messages, result.counts, self.options.replay)
        self._row(row)
        for value in values:
            writer.write(value)
        return True

    def _finish(self, writer: AtomicJsonlWriter, written: int) -> None:
        if written:
            writer.commit()
            self.totals.bytes_out += writer.bytes_written
        else:
            writer.abort()

    def _counted(self, items: Iterator[Record | Rejected]) -> Iterator[Record | Rejected]:
        for item in items:
            if isinstance(item, Record):
                self.progress.advance(item.raw_size)
            yield item

    def _detect(self, path: str, items):
        """The format and layout of a file, from its first records (one line may not tell)."""
        head = list(itertools.islice(items, DETECT_WINDOW))
        rest = itertools.chain(head, items)
        values = [i.value for i in head if isinstance(i, Record)]
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

    # -- records ---------------------------------------------------------------

    def _quarantine(self, item: Rejected) -> None:
        reason = f"{item.source}: {item.reason}"
        self.quarantine.write_rejected({"source": item.source, "reason": reason}, item)
        self._row(problem_row(item.source, "quarantined", reason))

    def _failed(self, conversation: Conversation, fmt, layout, why: str) -> None:
        reason = f"{conversation.source}: {why}"
        try:
            raw = b"\n".join(dumps(v) for v in fmt.write(conversation, layout))
        except Exception:        # kept as read when its format can't write it
            raw = dumps({"id": conversation.id, "messages": conversation.messages})
        self.quarantine.write({"source": conversation.source, "reason": reason, **raw_for_quarantine(raw)})
        row = problem_row(conversation.source, "failed", reason, conversation.id, len(conversation.messages))
        row["stats"] = dict(conversation.stats)    # e.g. how many input lines the conversation was read from
        self._row(row)

    def _row(self, row: dict) -> None:
        self.manifest.write(row)
        self.totals.add(row)
        self.progress.note(row["status"])
