"""Batch mode's first pass: which summary requests this run's conversations need.

Before the run proper, every conversation it would compact is read the way it
reads them (same stream, same formats, an incremental run's unchanged files and
conversations skipped) and compacted with the summarizer writing its requests
down instead of sending them. Nothing is written: no output, no manifest row, no
state; the run proper does all of that afterwards, in input order, as without
batches. The rounds, batches and ledger are summarizers/llm/batch.py's.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.run.fault_injection import fault_point
from hermes_pipeline.run.incremental import STATE_DIR
from hermes_pipeline.run.output_tree import CountingSink
from hermes_pipeline.run.work_stream import Deferred, WorkStream
from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.summarizers.llm.batch import BatchRun
from hermes_pipeline.summarizers.llm.batch_ledger import EVENTS, LEDGER, Ledger
from hermes_pipeline.summarizers.llm.errors import Gathered
from hermes_pipeline.transcript import Conversation

log = logging.getLogger(__name__)


class _ReadOnlyTree:
    """The output tree as the first pass sees it: its state is read, nothing is written."""
    dry = True

    def __init__(self, tree):
        self.state, self.path_for = tree.state, tree.path_for

    def sink(self, relative: Path, compression: str | None = None, document=None) -> CountingSink:
        return CountingSink()       # what a dry run writes: nothing


class _NoProgress:
    def advance(self, nbytes: int) -> None:
        pass


def ledger_for(tree, run_dir: Path) -> Ledger:
    """A persistent output tree keeps the ledger for the next run; else the run folder does."""
    folder = tree.root / STATE_DIR if tree.persistent else run_dir
    return Ledger(folder / LEDGER, events=run_dir / EVENTS)


def batch_first(summarizer, engine, run_dir: Path):
    """The executor's hook that runs the batches before the run proper, or None when batches are off."""
    calls = summarizer.calls      # an LLM summarizer's requests (summarizers/llm/calls.py)
    if not (getattr(calls, "batch_enabled", False) or getattr(calls, "export_to", None)):
        return None

    def run(inputs, tree, options, stop: threading.Event) -> None:
        def gather() -> dict[str, dict]:
            return needed_requests(calls, engine, inputs, tree, options, stop)
        batches = BatchRun(calls, ledger_for(tree, run_dir), stop, before_poll=lambda: fault_point("batch_poll"))
        batches.run(gather)
        log.info("%s: batches answered %d of the %d request(s) sent; the run proper follows", calls.label,
                 batches.delivered, batches.submitted)
    return run


def needed_requests(calls, engine, inputs, tree, options, stop: threading.Event) -> dict[str, dict]:
    """Cache key -> request of every summary request the conversations need that nothing answers yet
    (`calls`: the LLM summarizer's requests, which write them down instead of sending them)."""
    calls.start_gathering()
    try:
        for item in WorkStream(inputs, _ReadOnlyTree(tree), options, stop, _NoProgress()):
            if isinstance(item, Deferred):
                item = item.read()
            if not isinstance(item, Conversation):
                continue
            try:
                engine.compress(repair_tool_pairing(item))
            except Gathered:
                pass
            except SummarizerFatalError:
                raise
            except Exception as error:    # the run proper meets it again, and records it
                log.debug("first pass: %s: %s: %s", item.source, type(error).__name__, error)
    finally:
        gathered = calls.stop_gathering()
    return gathered
