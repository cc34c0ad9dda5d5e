"""The batch APIs of the fake provider: Anthropic Message Batches, OpenAI Batch and its Files.

Each item of a batch is answered as the fake answers the same request sent alone
(the same summary, usage, context-length error), when the batch is created; the
batch then says "in progress" for `polls_in_progress` looks (a slow finish) and
ends. Items can be scripted to come back errored (a 500 inside the batch), expired
or canceled: `outcomes` in submission order, or every n-th item (`errored_every`,
`expired_every`, as the CLI's --batch-* flags set them). `poll_faults` are HTTP
faults for the looks at a batch (a first poll that fails). Only the standard
library is used.
"""
from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
from collections import Counter, deque
from typing import Any, Callable

from hermes_pipeline.testing.fake_faults import Fault, as_fault
from hermes_pipeline.testing.fake_replies import anthropic_error, fault_response
from hermes_pipeline.testing.fake_summary import ANTHROPIC, OPENAI, parse_request
from hermes_pipeline.testing.http_server import Request

STAMP, STAMP_TS = "2026-01-01T00:00:00Z", 1767225600
_ANTHROPIC = re.compile(r"^(?:/v1)?/messages/batches(?:/(?P<id>[\w-]+)(?:/(?P<action>results|cancel))?)?$")
_OPENAI = re.compile(r"^(?:/v1)?/(?P<kind>batches|files)(?:/(?P<id>[\w-]+)(?:/(?P<action>cancel|content))?)?$")
PATHS = (_ANTHROPIC, _OPENAI)     # the fake provider routes these here
ERRORED = Fault("server_error", status=500)


class FakeBatches:
    def __init__(self, respond: Callable[[str, str, dict, Fault | None, int], tuple[int, dict, dict]]):
        self.respond = respond              # the provider's own answer to one request
        self.polls_in_progress = 2
        self.outcomes: deque = deque()      # "errored" | "expired" | "canceled" | None, per item in order
        self.errored_every = self.expired_every = 0
        self.poll_faults: deque = deque()   # Fault | None, per look at a batch
        self.created: Counter = Counter()   # batches created, by provider
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._batches: dict[str, dict] = {}
        self._files: dict[str, bytes] = {}
        self._items = 0

    def owns(self, path: str) -> bool:
        return any(pattern.match(path) for pattern in PATHS)

    def script_polls(self, faults) -> None:
        self.poll_faults.extend(as_fault(f) for f in faults)

    # ---- one HTTP request -------------------------------------------------------
    def answer(self, request: Request) -> tuple[int, Any, dict]:
        with self._lock:
            found = _ANTHROPIC.match(request.path)
            if found:
                return self._anthropic(request.method, found["id"], found["action"], request.raw,
                                       request.headers.get("host", ""))
            found = _OPENAI.match(request.path)
            return self._openai(request.method, found["kind"], found["id"], found["action"], request.raw,
                                request.headers)

    def _outcome(self) -> str | None:
        self._items += 1
        if self.outcomes:
            return self.outcomes.popleft()
        if self.errored_every and self._items % self.errored_every == 0:
            return "errored"
        if self.expired_every and self._items % self.expired_every == 0:
            return "expired"
        return None

    def _items_of(self, provider: str, requests: list[tuple[str, dict]], route: str) -> list[dict]:
        """Each item answered now, as alone: (custom_id, outcome, status, body)."""
        items = []
        for custom_id, body in requests:
            outcome = self._outcome()
            if outcome in ("expired", "canceled"):
                items.append({"id": custom_id, "outcome": outcome})
                continue
            fault = ERRORED if outcome == "errored" else None
            status, payload, _ = (fault_response(provider, fault, parse_request(body, provider)) if fault
                                  else self.respond(provider, route, body, None, next(self._ids)))
            items.append({"id": custom_id, "outcome": "succeeded" if status == 200 else "errored",
                          "status": status, "body": payload})
        return items

    def _look(self, batch: dict) -> tuple[int, Any, dict] | None:
        """A look at a batch: a scripted fault, or one poll nearer its end."""
        fault = self.poll_faults.popleft() if self.poll_faults else None
        if fault is not None:
            return fault_response(batch["provider"], fault, parse_request({}, batch["provider"]))
        batch["polls"] += 1
        if batch["polls"] > self.polls_in_progress or batch["cancel"]:
            batch["ended"] = True
        return None

    # ---- Anthropic Message Batches ----------------------------------------------
    def _anthropic(self, method: str, batch_id: str | None, action: str | None, raw: bytes, host: str):
        if batch_id is None and method == "POST":
            requests = [(r["custom_id"], r["params"]) for r in json.loads(raw)["requests"]]
            batch_id = f"msgbatch_fake{next(self._ids):06d}"
            self._batches[batch_id] = {"provider": ANTHROPIC, "polls": 0, "ended": False, "cancel": False,
                                       "items": self._items_of(ANTHROPIC, requests, "/v1/messages")}
            self.created[ANTHROPIC] += 1
            return 200, self._anthropic_batch(batch_id, host), {}
        batch = self._batches.get(batch_id or "")
        if batch is None:
            return 404, anthropic_error("not_found_error", f"no batch {batch_id}"), {}
        if action == "cancel":
            batch["cancel"] = True
        elif action == "results":
            if not batch["ended"]:
                return 400, anthropic_error("invalid_request_error", "batch has not ended"), {}
            return 200, self._anthropic_results(batch), {"content-type": "application/binary"}
        elif (failed := self._look(batch)) is not None:
            return failed
        return 200, self._anthropic_batch(batch_id, host), {}

    def _anthropic_state(self, item: dict, batch: dict) -> str:
        return "canceled" if batch["cancel"] and item["outcome"] == "succeeded" else item["outcome"]

    def _anthropic_batch(self, batch_id: str, host: str) -> dict:
        batch = self._batches[batch_id]
        counts = Counter(self._anthropic_state(i, batch) if batch["ended"] else "processing" for i in batch["items"])
        status = "ended" if batch["ended"] else "canceling" if batch["cancel"] else "in_progress"
        return {"id": batch_id, "type": "message_batch", "processing_status": status,
                "request_counts": {k: counts.get(k, 0) for k in
                                   ("processing", "succeeded", "errored", "canceled", "expired")},
                "created_at": STAMP, "expires_at": STAMP, "ended_at": STAMP if batch["ended"] else None,
                "cancel_initiated_at": STAMP if batch["cancel"] else None, "archived_at": None,
                "results_url": f"http://{host}/v1/messages/batches/{batch_id}/results" if batch["ended"] else None}

    def _anthropic_results(self, batch: dict) -> bytes:
        lines = []
        for item in batch["items"]:
            state = self._anthropic_state(item, batch)
            result = {"type": state}
            if state == "succeeded":
                result["message"] = item["body"]
            elif state == "errored":
                result["error"] = item["body"]
            lines.append(json.dumps({"custom_id": item["id"], "result": result}))
        return ("\n".join(lines) + "\n").encode()

    # ---- OpenAI Batch and Files -------------------------------------------------
    def _openai(self, method: str, kind: str, object_id: str | None, action: str | None, raw: bytes, headers):
        if kind == "files":
            if object_id is None and method == "POST":
                return 200, self._upload(raw, headers.get("content-type", "")), {}
            if object_id in self._files and action == "content":
                return 200, self._files[object_id], {"content-type": "application/octet-stream"}
            return 404, _openai_error(f"No such File object: {object_id}"), {}
        if object_id is None and method == "POST":
            request = json.loads(raw)
            lines = [json.loads(line) for line in self._files[request["input_file_id"]].splitlines() if line.strip()]
            object_id = f"batch_fake{next(self._ids):06d}"
            self._batches[object_id] = {
                "provider": OPENAI, "polls": 0, "ended": False, "cancel": False, "input": request["input_file_id"],
                "items": self._items_of(OPENAI, [(line["custom_id"], line["body"]) for line in lines],
                                        "/v1/chat/completions")}
            self.created[OPENAI] += 1
            return 200, self._openai_batch(object_id), {}
        batch = self._batches.get(object_id or "")
        if batch is None:
            return 404, _openai_error(f"No batch found with id '{object_id}'."), {}
        if action == "cancel":
            batch["cancel"] = True
        elif (failed := self._look(batch)) is not None:
            return failed
        return 200, self._openai_batch(object_id), {}

    def _upload(self, raw: bytes, content_type: str) -> dict:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        parts = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
        data = parts["file"].get_payload(decode=True)
        file_id = f"file-fake{next(self._ids):06d}"
        self._files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": STAMP_TS,
                "filename": parts["file"].get_filename() or "batch.jsonl",
                "purpose": parts["purpose"].get_content().strip(), "status": "processed"}

    def _openai_batch(self, batch_id: str) -> dict:
        batch = self._batches[batch_id]
        status, files = "in_progress", {}
        if batch["ended"]:
            status = "cancelled" if batch["cancel"] else \
                "expired" if any(i["outcome"] == "expired" for i in batch["items"]) else "completed"
            files = batch.setdefault("files", self._result_files(batch))
        elif batch["cancel"]:
            status = "cancelling"
        done = [i for i in batch["items"] if i["outcome"] in ("succeeded", "errored")] if batch["ended"] else []
        return {"id": batch_id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                "input_file_id": batch["input"], "completion_window": "24h", "status": status,
                "output_file_id": files.get("output"), "error_file_id": files.get("error"),
                "created_at": STAMP_TS, "request_counts": {
                    "total": len(batch["items"]), "completed": sum(i["outcome"] == "succeeded" for i in done),
                    "failed": sum(i["outcome"] == "errored" for i in done)}}

    def _result_files(self, batch: dict) -> dict[str, str]:
        """The output file (answers) and the error file (errors, expired, canceled) of an ended batch."""
        output, errors = [], []
        for n, item in enumerate(batch["items"]):
            line: dict = {"id": f"batch_req_{n}", "custom_id": item["id"], "response": None, "error": None}
            if batch["cancel"]:
                line["error"] = {"code": "batch_cancelled", "message": "This request was cancelled."}
            elif item["outcome"] == "expired":
                line["error"] = {"code": "batch_expired", "message": "This request could not be executed before "
                                                                    "the completion window expired."}
            else:
                line["response"] = {"status_code": item["status"], "request_id": f"req_{n}", "body": item["body"]}
            (output if line["response"] and item["status"] == 200 else errors).append(json.dumps(line))
        files = {}
        for name, lines in (("output", output), ("error", errors)):
            if lines:
                files[name] = f"file-fake{next(self._ids):06d}"
                self._files[files[name]] = ("\n".join(lines) + "\n").encode()
        return files


def _openai_error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
