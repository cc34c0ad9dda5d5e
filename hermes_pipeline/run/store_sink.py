"""Where a run writes a Hermes store's compactions: a copy of the store (the default), or the store itself.

copy: the output is the input store copied with SQLite's online backup (a
consistent snapshot even while Hermes writes to it), each session's compaction
applied to the copy, renamed into place when the store is done, like any output
file. in_place (`output.native.store=in_place`): each compaction is applied to
the input store at once, under the session's compression lock, in its own
transaction; a session that changed since it was read is left alone (and said
so in the run log). Applying the same change twice does nothing the second time,
so an incremental run that reuses an earlier change is safe either way. A store
is only opened here once its layout is known to be one this code can write
(formats/hermes_store/layout.py, checked before the store is read).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from hermes_pipeline.formats.hermes_store import store
from hermes_pipeline.run.run_folder import run_log

IN_PLACE = "in_place"
LEFT = "left"       # the state's status of a session whose change was not applied: not reusable, done again


class StoreSink:
    """The same interface as output_tree.FileSink: write() per conversation, finish() once."""

    def __init__(self, source: Path, target: Path, in_place: bool, keep_partial: bool):
        self.source, self.in_place, self.keep_partial = Path(source), in_place, keep_partial
        self.target = self.source if in_place else Path(target)
        self.temp = self.target.with_name(f".{self.target.name}.part")
        self.written = 0
        self.db = None
        self.writer = self               # what the executor aborts when it gives a file up

    def _open(self):
        if self.db is None:
            if not self.in_place:
                self.target.parent.mkdir(parents=True, exist_ok=True)
                self.temp.unlink(missing_ok=True)
                store.copy_store(self.source, self.temp)
            self.db = store.connect(self.source if self.in_place else self.temp)
        return self.db

    def write(self, data: bytes) -> str | None:
        """Apply the change lines of one conversation (none when it was left unchanged); why a change was not
        applied, or None: the run's records must say what the store holds (executor._done)."""
        db = self._open()
        left = None
        for line in data.splitlines():
            change = json.loads(line)
            try:
                outcome = store.apply(db, change)
            except store.StoreBusy as busy:      # Hermes is compacting it now: its own compaction wins
                outcome = f"left as it is: {busy}"
            if outcome != "compacted":
                run_log.warning("%s: session %s %s", self.target, change["session_id"], outcome)
                left = outcome
        self.written += 1
        return left

    def finish(self, complete: bool) -> int | None:
        db = self._open()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")     # every change in the file itself before it moves
        db.close()
        self.db = None
        if self.in_place:
            return self.source.stat().st_size
        if complete or self.keep_partial:
            os.replace(self.temp, self.target)
            return self.target.stat().st_size
        self.abort()
        return None

    def abort(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if not self.in_place:
            self.temp.unlink(missing_ok=True)
