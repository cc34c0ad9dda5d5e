"""Batch mode (`summarizer.batch.enabled=true`): a run's summary requests through the providers' batch
APIs (Anthropic Message Batches, OpenAI Batch), at half the price of plain calls.

The request cache is where batches and conversations meet. A run in batch mode:
1. compacts every conversation once with the summarizer writing its requests down instead of
   sending them (run/batch_pass.py; what the cache already answers is not asked again);
2. sends them in batches within the provider's limits, each written to the ledger before it is
   polled; a batch in the ledger that an earlier (killed) run sent is attached to, not sent again,
   and one whose requests no conversation needs any more is canceled;
3. polls, backing off from a few seconds to `poll_s`, with a progress line, for at most
   `max_wait_h` (then cancels the batch);
4. stores the answers in the request cache (billed once, at the batch price, to the conversation
   that uses each) and "too long" for the requests to split; the parts of a split, then their
   merge, go in the next rounds;
5. then the run proper compacts every conversation: the cache answers, and whatever no batch
   delivered (errored, expired, canceled) is a plain call under the usual retries, breaker and
   fallback.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from hermes_pipeline.summarizers.base import SummarizerFatalError
from hermes_pipeline.summarizers.llm import prompt as P
from hermes_pipeline.summarizers.llm.batch_files import write_requests
from hermes_pipeline.summarizers.llm.batch_ledger import Ledger
from hermes_pipeline.summarizers.llm.errors import classify_item

log = logging.getLogger(__name__)
MAX_ROUNDS = 8              # a whole request, parts of parts (up to 16), their merges
FIRST_POLL_S = 2.0          # the first look; each next one waits twice as long, up to poll_s
MAX_POLL_FAILURES = 10      # polls of one batch failing in a row before its requests go as plain calls


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m" if hours else f"{minutes} m {seconds:02d} s" if minutes else f"{seconds} s"


class RequestsExported(SummarizerFatalError):
    """The requests are in a file for a model elsewhere to answer: the run stops, nothing half done."""

    def __init__(self, calls, count: int):
        super().__init__(f"{count} request(s) to {calls.label} written to {calls.export_to} ({calls.input_format} "
                         "JSONL): answer them with any model (the provider's batch API does), then run again with "
                         "summarizer.batch.import_from=[RESULTS.jsonl] (results in the provider's batch output "
                         "format)")
        self.count = count


class BatchRun:
    def __init__(self, calls, ledger: Ledger, stop: threading.Event | None = None,
                 before_poll: Callable[[], None] = lambda: None):
        """`calls`: the LLM summarizer's requests (an LLMCalls of a provider with a batch API);
        `before_poll`: called before each look at the batches (the run's kill point for its resume tests)."""
        self.s, self.ledger = calls, ledger
        self.stop = stop or threading.Event()
        self.before_poll = before_poll
        self.endpoint = calls._scrub(calls.endpoint)
        self.submitted = self.delivered = 0

    def run(self, gather: Callable[[], dict[str, dict]]) -> None:
        """Rounds of gather -> send (or attach) -> wait -> collect, until a round needs nothing new; with
        `export_to`, the first round's requests are written to that file instead, and the run stops."""
        for _ in range(MAX_ROUNDS):
            wanted = gather()
            if self.s.export_to:
                if wanted:
                    raise RequestsExported(self.s, write_requests(self.s.export_to, self.s, wanted))
                return
            pending = self._attach_or_cancel(wanted)
            covered = {key for record in pending for key in record["keys"]}
            new = {key: params for key, params in wanted.items() if key not in covered}
            pending += [r for r in map(self._submit, self._chunks(new)) if r is not None]
            if not pending or self.stop.is_set():
                return
            self._wait(pending)
            if self.stop.is_set():
                return

    # ---- sending ---------------------------------------------------------------
    def _chunks(self, items: dict[str, dict]) -> list[dict[str, dict]]:
        """The requests in batches within the provider's limits (count and bytes)."""
        chunks, chunk, size = [], {}, 0
        for key, params in items.items():
            length = len(str(params)) + 200
            if chunk and (len(chunk) >= self.s.batch_max_items or size + length > self.s.batch_max_bytes):
                chunks.append(chunk)
                chunk, size = {}, 0
            chunk[key] = params
            size += length
        return chunks + ([chunk] if chunk else [])

    def _submit(self, items: dict[str, dict]) -> dict | None:
        try:
            sent = self.s._run(self.s.batch_submit(items))
        except Exception as error:
            self._refused(error, "sending a batch")
            self.s.batch_tried.update(items)
            return None
        record = {**sent, "endpoint": self.endpoint, "model": self.s.model, "submitted": time.time(),
                  "keys": list(items)}
        self.ledger.add(record)          # written down before the first poll: a killed run finds it again
        self.submitted += len(items)
        log.info("%s: sent batch %s of %d summary request(s)", self.s.label, record["id"], len(items))
        return record

    def _attach_or_cancel(self, wanted: dict[str, dict]) -> list[dict]:
        """Earlier runs' batches of this endpoint: attached when they hold wanted requests, else canceled."""
        kept = []
        for record in self.ledger.open_batches(self.endpoint, self.s.model):
            if set(record["keys"]) & wanted.keys():
                kept.append(record)
                self.ledger.note("attached", record, items=len(record["keys"]))
                log.info("%s: attached to batch %s (%d request(s), sent %s ago by an earlier run)", self.s.label,
                         record["id"], len(record["keys"]), _duration(time.time() - record["submitted"]))
            else:
                self._cancel(record, "its requests are no longer needed")
        return kept

    def _cancel(self, record: dict, why: str) -> None:
        try:
            self.s._run(self.s.batch_cancel(record))
        except Exception as error:     # e.g. it ended meanwhile: nothing left to cancel
            log.debug("canceling batch %s: %s", record["id"], self.s._describe(error))
        self.ledger.remove(record, "canceled", why=why)
        log.info("%s: canceled batch %s: %s", self.s.label, record["id"], why)

    def _refused(self, error: BaseException, doing: str) -> None:
        """A batch call failed: credentials stop the run, anything else leaves the work to plain calls."""
        why = self.s._describe(error)
        if self.s._classify(error) == "fatal":
            raise SummarizerFatalError(f"{self.s.label}: the provider refused the credentials or quota while "
                                       f"{doing} ({why}); check {self.s.key_env} and the account")
        log.warning("%s: %s failed (%s); its requests go as plain calls", self.s.label, doing, why)

    # ---- waiting and collecting -------------------------------------------------
    def _wait(self, pending: list[dict]) -> None:
        delay, failures = min(FIRST_POLL_S, self.s.batch_poll_s), {r["id"]: 0 for r in pending}
        while pending and not self.stop.wait(delay):
            self.before_poll()
            for record in list(pending):
                try:
                    ended, counts = self.s._run(self.s.batch_status(record))
                    outcomes = self.s._run(self.s.batch_results(record)) if ended else None
                    failures[record["id"]] = 0
                except Exception as error:      # a poll that fails is tried again at the next look
                    if self.s._classify(error) == "fatal":
                        self._refused(error, f"polling batch {record['id']}")
                    failures[record["id"]] += 1
                    log.warning("%s: batch %s: poll %d failed (%s)", self.s.label, record["id"],
                                failures[record["id"]], self.s._describe(error))
                    if failures[record["id"]] >= MAX_POLL_FAILURES:
                        self._give_up(record, pending, "its polls kept failing")
                    continue
                if ended:
                    pending.remove(record)
                    self._collect(record, outcomes)
                    continue
                waited = time.time() - record["submitted"]
                log.info("%s: batch %s: %s; waited %s of %s, next look in %s", self.s.label, record["id"],
                         ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "in progress", _duration(waited),
                         _duration(self.s.batch_max_wait_h * 3600), _duration(min(delay * 2, self.s.batch_poll_s)))
                if waited > self.s.batch_max_wait_h * 3600 and not record.get("canceling"):
                    record["canceling"] = True      # ends soon; what it finished is still collected
                    try:
                        self.s._run(self.s.batch_cancel(record))
                    except Exception as error:
                        self._give_up(record, pending, f"canceling after {self.s.batch_max_wait_h} h failed "
                                                       f"({self.s._describe(error)})")
            delay = min(delay * 2, self.s.batch_poll_s)

    def _give_up(self, record: dict, pending: list[dict], why: str) -> None:
        pending.remove(record)
        self.s.batch_tried.update(record["keys"])
        self.ledger.remove(record, "abandoned", why=why)
        log.warning("%s: batch %s abandoned: %s; its requests go as plain calls", self.s.label, record["id"], why)

    def _collect(self, record: dict, outcomes: list) -> None:
        """The batch's answers into the request cache; what it did not deliver is left to plain calls."""
        states: dict[str, int] = {}
        delivered = set()
        for outcome in outcomes:
            state = outcome.state
            if state == "succeeded":
                read = self.s.readers.get(outcome.key, P.clean_summary)     # a summary's, or the exam's
                text = "" if outcome.reply.cut else read(outcome.reply.text)
                if text:
                    self.s.cache.put(outcome.key, {"text": text, "via": "batch", "usage": outcome.reply.usage})
                    delivered.add(outcome.key)
                else:
                    state = "unusable reply"
            elif state == "errored" and classify_item(outcome.status, outcome.error_type, outcome.error) == "too_long":
                self.s.cache.put(outcome.key, {"too_long": self.s._scrub(outcome.error)[:400]})
                delivered.add(outcome.key)
                state = "too long: to split"
            states[state] = states.get(state, 0) + 1
        missing = set(record["keys"]) - delivered
        self.s.batch_tried.update(missing)
        self.delivered += len(delivered)
        self.ledger.remove(record, "collected", states=states, plain_calls=len(missing))
        log.info("%s: batch %s collected: %s%s", self.s.label, record["id"],
                 ", ".join(f"{n} {state}" for state, n in states.items()) or "no results",
                 f"; {len(missing)} request(s) go as plain calls" if missing else "")
