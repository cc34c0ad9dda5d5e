"""The circuit breaker: stop calling an endpoint that is dead or wrong, not one that is busy.

It counts failures in a row, and opens at `summarizer.breaker.max_failures`: from then on no
request goes out in this run (every conversation falls back, and says why). What counts is the
caller's policy (summarizers/llm/calls.py: a call that failed after its retries with the endpoint
to blame, or, until the endpoint has answered anything, every attempt that got no answer);
weather does not count: a 429 is flow control, 529/503/500s a retry carries are no failed call,
and any success starts the count again.
"""
from __future__ import annotations

import logging

from hermes_pipeline.summarizers.llm.errors import CircuitOpen

log = logging.getLogger(__name__)


def endpoint_down(exc: BaseException, no_answer: bool) -> bool:
    """A failure that says the endpoint itself is unwell or wrong (not this request): no answer, a 5xx,
    or 404/405 (a wrong base_url path, or a model the endpoint does not serve: every request fails)."""
    status = getattr(exc, "status_code", 0) or 0
    return no_answer or status >= 500 or status in (404, 405)


class CircuitBreaker:
    def __init__(self, limit: int, label: str):
        self.limit, self.label = max(1, int(limit)), label
        self.failures = 0                # in a row
        self.answered = False            # the endpoint has sent an HTTP answer (any status) this run
        self.opened: str | None = None   # why the endpoint is left alone, once it is

    def refuse_when_open(self) -> None:
        if self.opened:
            raise CircuitOpen(self.opened)

    def succeeded(self) -> None:
        self.failures, self.answered = 0, True

    def failed(self, what: str, why: str) -> None:
        """One more failure in a row (`what`: the kind counted, for the message); it opens at the limit."""
        self.failures += 1
        if self.failures >= self.limit and self.opened is None:
            self.opened = (f"{self.label}: circuit open after {self.failures} {what} in a row ({why}); "
                           "the endpoint is not called again in this run")
            log.error(self.opened)      # said once; each conversation's fallback names it too

    def attempt_failed(self, no_answer: bool, why: str) -> None:
        """An endpoint that has never answered and refuses or drops a connection is dead or mistyped, not
        busy: each such attempt counts, so the run learns it in seconds, not after every call's retries."""
        if not no_answer:
            self.answered = True
        elif not self.answered:
            self.failed("attempts without an answer", why)

    def call_failed(self, down: bool, no_answer: bool, why: str) -> None:
        """A call that failed after its retries counts when the endpoint is to blame (and was not already
        counted attempt by attempt)."""
        if down and not (no_answer and not self.answered):
            self.failed("calls failed after their retries", why)
