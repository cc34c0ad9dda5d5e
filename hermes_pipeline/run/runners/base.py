"""The runner seam: where each conversation's work runs. The run loop (run/executor.py) calls only this."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Runner(ABC):
    name: str = ""

    @abstractmethod
    def start(self, engine: Any, make_engine: Callable[[], Any], auto_concurrency: int) -> None:
        """Before any work: the run's engine (to use in this process) and a picklable factory of one (for
        workers elsewhere); `auto_concurrency` is what `concurrency: auto` means (the summarizer's requests
        in flight)."""

    @abstractmethod
    def map(self, work: Callable[[Any, T], R], items: Iterable[T], needs_work: Callable[[T], bool]) -> Iterator[R]:
        """`work(engine, item)` for each item, results in input order; an item `needs_work` says no to is
        done here as `work(None, item)` (nothing to send away)."""

    def describe(self) -> str | None:
        """A start-up line saying where the work runs, when there is more to say than 'one thread here'."""
        return None

    def close(self) -> None:
        """At the end of the run: stop workers, close clients."""
