"""Where a run writes down its batches before it waits for them: the ledger.

A batch is paid for when it is submitted; a run killed while it waits must find
it again instead of submitting the same requests twice. So each batch's id and
the cache keys of its requests go into a small JSON file, atomically (written
beside, flushed, renamed), before the first poll: `<output.dir>/.hermes/batches.json`
with a persistent output tree (the next nightly run reads it), else the run
folder's own. A batch leaves the ledger once its results are in the request
cache, or once it is canceled. `batches.jsonl` in the run folder keeps what
happened to each batch this run (submitted, attached, collected, canceled).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from hermes_pipeline.summarizers.base import SummarizerFatalError

LEDGER = "batches.json"
EVENTS = "batches.jsonl"


class Ledger:
    def __init__(self, path: Path, events: Path | None = None):
        self.path, self.events = path, events
        self.batches: list[dict] = self._read()

    def _read(self) -> list[dict]:
        try:
            return list(json.loads(self.path.read_text()).get("batches") or [])
        except FileNotFoundError:
            return []
        except (ValueError, AttributeError) as error:    # never lose track silently: stop, and say which file
            raise SummarizerFatalError(f"{self.path}: not a batch ledger ({error}); move it aside to start afresh "
                                       "(batches it listed are no longer tracked)") from None

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{self.path.name}.part")
        with open(temp, "w") as handle:
            json.dump({"batches": self.batches}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)

    def open_batches(self, endpoint: str, model: str) -> list[dict]:
        """Batches of this endpoint and model not yet collected (another endpoint's are left alone)."""
        return [b for b in self.batches if b["endpoint"] == endpoint and b["model"] == model]

    def add(self, record: dict) -> None:
        self.batches.append(record)
        self._write()
        self.note("submitted", record, items=len(record["keys"]))

    def remove(self, record: dict, event: str, **details) -> None:
        self.batches = [b for b in self.batches if b["id"] != record["id"]]
        self._write()
        self.note(event, record, **details)

    def note(self, event: str, record: dict, **details) -> None:
        if self.events is not None:
            with open(self.events, "a") as handle:
                handle.write(json.dumps({"time": round(time.time(), 3), "event": event, "batch": record["id"],
                                         "endpoint": record["endpoint"], **details}) + "\n")
