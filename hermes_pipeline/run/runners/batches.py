"""Consecutive items sent to another process together: one task per batch, not per conversation.

Each task costs the sending process, the pool or scheduler and the worker a
fixed amount (a few hundred microseconds to a few milliseconds), as much as
compacting a small conversation: small conversations travel in batches, long
ones alone, so work is still shared finely where it is heavy. Items that need
no engine (markers, rejected lines, reused conversations) stay in this process
and are merged back in place.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

BATCH_BYTES = 256 << 10     # pickled bytes of the items sent in one task ...
BATCH_ITEMS = 16            # ... or this many items, whichever comes first


@dataclass
class Batch:
    """Consecutive items: those needing work pickled to go to a worker, the rest kept here."""
    entries: list[tuple[bool, Any]] = field(default_factory=list)   # (sent away, blob or item)
    size: int = 0

    @property
    def blobs(self) -> list[bytes]:
        return [blob for sent, blob in self.entries if sent]


def batches(items: Iterable, needs_work: Callable[[Any], bool]) -> Iterator[Batch]:
    batch = Batch()
    for item in items:
        if needs_work(item):
            blob = pickle.dumps(item, protocol=5)   # a scheduler or pool passes one blob on without unpacking it
            batch.entries.append((True, blob))
            batch.size += len(blob)
        else:
            batch.entries.append((False, item))
        if batch.size >= BATCH_BYTES or len(batch.entries) >= BATCH_ITEMS:
            yield batch
            batch = Batch()
    if batch.entries:
        yield batch


def work_on_blobs(work: Callable[[Any, Any], Any], engine: Any, blobs: list[bytes]) -> list:
    """In the worker: each item of a batch, in order."""
    return [work(engine, pickle.loads(blob)) for blob in blobs]


def merged(batch: Batch, results: list, local: Callable[[Any], Any]) -> list:
    """A batch's results in input order: the worker's for the items sent, this process's for the rest."""
    done = iter(results)
    return [next(done) if sent else local(item) for sent, item in batch.entries]
