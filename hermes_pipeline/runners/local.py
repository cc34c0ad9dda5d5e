"""The local runner: conversations in input order on this machine, several at once if asked.

Threads (`runner.concurrency`) pay off when the summarizer waits on a remote
model; worker processes (`runner.processes`) when the embedded summarizer
keeps every core busy. Either way results come back in input order, with a
bounded number in flight, so output files are identical and memory stays
bounded whatever the setting.
"""
from __future__ import annotations

import multiprocessing
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")
WINDOW_PER_WORKER = 2   # items in flight per worker: enough to keep it busy, few enough to bound memory


def _in_order(submit: Callable[[T], Any], items: Iterable[T], width: int) -> Iterator:
    """Submit items, keeping at most `width` pending; collect results in input order."""
    window: deque = deque()
    for item in items:
        window.append(submit(item))
        if len(window) >= width:
            yield window.popleft()
    yield from window


def ordered_map(function: Callable[[T], R], items: Iterable[T], concurrency: int) -> Iterator[R]:
    """function(item) for each item, in input order, `concurrency` threads at once."""
    if concurrency <= 1:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for future in _in_order(lambda item: pool.submit(function, item), items, concurrency * WINDOW_PER_WORKER):
            yield future.result()


_worker_state: Any = None


def _start_worker(make_state: Callable[[], Any]) -> None:
    global _worker_state
    _worker_state = make_state()


def _call_in_worker(function: Callable[[Any, T], R], item: T) -> R:
    return function(_worker_state, item)


def process_map(function: Callable[[Any, T], R], items: Iterable[T], processes: int,
                make_state: Callable[[], Any]) -> Iterator[R]:
    """function(state, item) for each item, in input order, in worker processes.

    Each worker builds its own state (the engine) once with `make_state`,
    which must be picklable: a resolved config, not live objects.
    """
    context = multiprocessing.get_context("spawn" if multiprocessing.get_start_method() == "spawn" else "fork")
    with context.Pool(processes, initializer=_start_worker, initargs=(make_state,)) as pool:
        pending = _in_order(lambda item: pool.apply_async(_call_in_worker, (function, item)), items,
                            processes * WINDOW_PER_WORKER)
        for result in pending:
            yield result.get()


class LocalRunner:
    """Runs `work(engine, item)` for each item, in input order, on this machine."""

    def __init__(self, name: str = "local", processes: int = 1, concurrency: Any = "auto"):
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

    def map(self, work: Callable[[Any, T], R], items: Iterable[T]) -> Iterator[R]:
        if self.processes > 1:
            return process_map(work, items, self.processes, self.make_engine)
        return ordered_map(partial(work, self.engine), items, self.concurrency)

    def describe(self) -> str:
        return f"local ({self.processes} process(es), {self.concurrency} in flight)"

    def close(self) -> None:
        pass
