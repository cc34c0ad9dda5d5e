"""The local runner: conversations in input order on this machine, several at once if asked.

Threads (`runner.concurrency`) pay off when the summarizer waits on a remote
model; worker processes (`runner.processes`) when the embedded summarizer
keeps every core busy (small conversations travel to them in batches:
batches.py). Either way results come back in input order, with a bounded
number in flight, so output files are identical and memory stays
bounded whatever the setting. Items that need no engine (rejected lines,
conversations an incremental run reuses) never leave this process.
"""
from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Iterable, Iterator, TypeVar

from hermes_pipeline.config.schema import LocalRunnerConfig as Options
from hermes_pipeline.run.runners.base import Runner
from hermes_pipeline.run.runners.batches import batches, merged, work_on_blobs

T = TypeVar("T")
R = TypeVar("R")
WINDOW_PER_WORKER = 2   # items in flight per worker: enough to keep it busy, few enough to bound memory


def done(value: Any) -> Future:
    """A future that already holds its value."""
    future: Future = Future()
    future.set_result(value)
    return future


def in_order(submit: Callable[[T], Any], items: Iterable[T], width: int, needs_work: Callable[[T], bool],
             local: Callable[[T], Any], result: Callable[[Any], R] = lambda f: f.result()) -> Iterator[R]:
    """Submit the items that need work, keeping at most `width` pending; results in input order."""
    window: deque = deque()
    for item in items:
        window.append(submit(item) if needs_work(item) else done(local(item)))
        if len(window) >= width:
            yield _value(window.popleft(), result)
    while window:
        yield _value(window.popleft(), result)


def _value(future, result):
    return future.result() if isinstance(future, Future) else result(future)


def in_order_batched(send: Callable[[list[bytes]], Callable[[], list]], items: Iterable, width: int,
                     needs_work: Callable[[Any], bool], local: Callable[[Any], Any]) -> Iterator:
    """Results one by one, in input order, of items sent to workers in batches (batches.py).
    `send(blobs)` starts a worker task and returns the function that waits for its results."""
    submit = lambda batch: (batch, send(batch.blobs))
    for results in in_order(submit, batches(items, needs_work), width, lambda batch: bool(batch.blobs),
                            lambda batch: merged(batch, [], local), lambda sent: merged(sent[0], sent[1](), local)):
        yield from results


_worker_state: Any = None


def _start_worker(make_state: Callable[[], Any]) -> None:
    global _worker_state
    # a forked worker inherits the run's stop-on-signal handlers: the pool must be able to end it
    # (SIGTERM), and Ctrl-C is for the parent to handle (it finishes or abandons the work in flight)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_state = make_state()


def _call_in_worker(function: Callable[[Any, T], R], blobs: list[bytes]) -> list[R]:
    return work_on_blobs(function, _worker_state, blobs)


class LocalRunner(Runner):
    """Runs `work(engine, item)` for each item, in input order, on this machine."""

    def __init__(self, name: str = Options.name, processes: int = Options.processes,
                 concurrency: Any = Options.concurrency):
        self.name = name
        self.processes = int(processes)
        self.concurrency = concurrency
        self.engine = None
        self.make_engine: Callable[[], Any] | None = None

    def start(self, engine, make_engine: Callable[[], Any], auto_concurrency: int) -> None:
        """The run's engine (for threads) and a picklable factory of one (for worker processes)."""
        self.engine, self.make_engine = engine, make_engine
        if self.concurrency in (None, "auto"):
            self.concurrency = auto_concurrency
        self.concurrency = int(self.concurrency)

    def map(self, work: Callable[[Any, T], R], items: Iterable[T], needs_work: Callable[[T], bool]) -> Iterator[R]:
        local = partial(work, None)
        if self.processes > 1:
            return self._in_processes(work, items, needs_work, local)
        if self.concurrency <= 1:
            return (work(self.engine, item) if needs_work(item) else local(item) for item in items)
        return self._in_threads(work, items, needs_work, local)

    def _in_threads(self, work, items, needs_work, local):
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            yield from in_order(lambda item: pool.submit(work, self.engine, item), items,
                                self.concurrency * WINDOW_PER_WORKER, needs_work, local)

    def _in_processes(self, work, items, needs_work, local):
        # each worker builds its own engine once, from a resolved config (picklable)
        context = multiprocessing.get_context("spawn" if multiprocessing.get_start_method() == "spawn" else "fork")
        with context.Pool(self.processes, initializer=_start_worker, initargs=(self.make_engine,)) as pool:
            yield from in_order_batched(lambda blobs: pool.apply_async(_call_in_worker, (work, blobs)).get, items,
                                        self.processes * WINDOW_PER_WORKER, needs_work, local)

    def describe(self) -> str | None:
        """A start-up line, when there is more to say than 'one thread on this machine'."""
        if self.processes > 1:
            return f"runner: local, {self.processes} worker processes"
        return f"runner: local, {self.concurrency} conversations in flight" if self.concurrency > 1 else None

    def close(self) -> None:
        pass
