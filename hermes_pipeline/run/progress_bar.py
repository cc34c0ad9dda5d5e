"""Progress while a run works: a bar on a terminal, periodic log lines otherwise."""
from __future__ import annotations

import logging
import sys
import time
from collections import Counter

log = logging.getLogger("hermes_pipeline.run.progress_bar")
LOG_EVERY_SECONDS = 10.0


class Progress:
    def __init__(self, mode: str, total_bytes: int):
        if mode == "auto":
            mode = "bar" if sys.stderr.isatty() else "log"
        self.mode = mode
        self.total = total_bytes
        self.done = 0
        self.statuses: Counter = Counter()
        self._bar = None
        self._last_log = time.monotonic()

    def __enter__(self):
        if self.mode == "bar":
            from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress
            self._bar = RichProgress(TextColumn("compacting"), BarColumn(), DownloadColumn(),
                                     TextColumn("{task.fields[statuses]}"), TimeRemainingColumn(), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("run", total=self.total, statuses="")
        return self

    def advance(self, nbytes: int) -> None:
        self.done += nbytes
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)

    def note(self, status: str) -> None:
        self.statuses[status] += 1
        if self._bar is not None:
            self._bar.update(self._task, statuses=" ".join(f"{k}={v}" for k, v in sorted(self.statuses.items())))
        elif self.mode == "log" and time.monotonic() - self._last_log >= LOG_EVERY_SECONDS:
            self._log_line()

    def _log_line(self) -> None:
        self._last_log = time.monotonic()
        share = 100.0 * self.done / self.total if self.total else 100.0
        log.info("progress: %.0f%% of input read, %s", share, dict(self.statuses))

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()
        elif self.mode == "log":
            self._log_line()     # where the run ended, however short it was
        return False
