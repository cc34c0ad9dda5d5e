"""The local runner: conversations in input order, optionally several at once.

Threads pay off when the summarizer waits on a remote model; results are
still yielded in input order, so output files are identical whatever the
concurrency.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(function: Callable[[T], R], items: Iterable[T], concurrency: int) -> Iterator[tuple[T, R]]:
    """(item, function(item)) in input order, with at most `concurrency` in flight."""
    if concurrency <= 1:
        for item in items:
            yield item, function(item)
        return
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        window: deque = deque()
        for item in items:
            window.append((item, pool.submit(function, item)))
            if len(window) >= concurrency * 2:
                done_item, future = window.popleft()
                yield done_item, future.result()
        while window:
            done_item, future = window.popleft()
            yield done_item, future.result()
