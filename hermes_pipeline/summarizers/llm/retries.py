"""Retries of one request to a model: tenacity is the only retry layer (the SDKs' own are off, so every
attempt is counted). Exponential backoff with jitter, a server's `retry-after` honoured up to
`summarizer.retry.max_retry_after`; what is retried is the caller's `retryable` (429, 5xx, 529, timeouts,
dropped connections: summarizers/llm/errors.py `classify`), never another 4xx.
"""
from __future__ import annotations

from typing import Callable

from tenacity import AsyncRetrying, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from hermes_pipeline.summarizers.llm.errors import retry_after


def waits(initial_backoff: float, max_backoff: float, max_retry_after: float) -> Callable:
    """The wait before the next attempt: what the server asked for (capped), else the backoff. The jitter
    scales with the backoff, so small test settings stay fast."""
    backoff = wait_exponential_jitter(initial=initial_backoff, max=max_backoff, jitter=initial_backoff)

    def wait(state) -> float:
        asked = retry_after(state.outcome.exception())
        return min(asked, max_retry_after) if asked is not None else backoff(state)
    return wait


def retrying(attempts: int, wait: Callable, retryable: Callable[[BaseException], bool],
             before_sleep: Callable, asynchronous: bool = True) -> AsyncRetrying | Retrying:
    """`async for attempt in retrying(...)` (or `for`, not asynchronous): at most `attempts` tries; the last
    failure is raised as it is."""
    kind = AsyncRetrying if asynchronous else Retrying
    return kind(stop=stop_after_attempt(attempts), wait=wait, reraise=True, retry=retry_if_exception(retryable),
                before_sleep=before_sleep)
