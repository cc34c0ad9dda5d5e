"""What a persistent output tree remembers between runs (`<output.dir>/.hermes/`), and so what a nightly
(incremental) run skips: a file unchanged since its output was written (`file_unchanged`), and a
conversation done before and done well (`item` + `reusable`), whose bytes are written again as they were.

- `state.sqlite`: per input file, what it looked like when its output was last
  written; per conversation (an input line, or a whole-file log), the bytes
  written for it under the config that wrote them, and its manifest row. A
  conversation is committed the moment it is done, so a run killed at any
  point loses nothing it finished: the rerun reuses those bytes.
- `lock`: one run at a time per output tree (an OS lock: a dead holder's lock
  is released by the kernel, so a stale lock is simply taken over).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import sqlite3
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from hermes_pipeline import __version__
from hermes_pipeline.config.schema import CompressionConfig

STATE_DIR = ".hermes"
# Built-in classes that moved to other modules keep, in the fingerprint, the name they had when existing
# output trees were fingerprinted: a move changes no output byte, so it must not recompact an archive.
FINGERPRINT_NAMES = {
    "hermes_pipeline.summarizers.embedded.summarizer.ExtractiveSummarizer":
        "hermes_pipeline.summarizers.extractive.ExtractiveSummarizer",
    "hermes_pipeline.summarizers.llm.anthropic.AnthropicSummarizer":
        "hermes_pipeline.summarizers.anthropic.AnthropicSummarizer",
    "hermes_pipeline.summarizers.llm.openai.OpenAISummarizer": "hermes_pipeline.summarizers.openai.OpenAISummarizer",
}
# options added after output trees were fingerprinted: hashed only when set to something else, so that
# an archive compacted before they existed is not recompacted for a setting it was compacted with
ADDED_LATER = {"compression.summary_context_share": CompressionConfig.summary_context_share,
               "compression.summary_ceiling": CompressionConfig.summary_ceiling}
STATE_FILE = "state.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    rel_path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, config_fp TEXT,
    out_size INTEGER, items INTEGER, run_id TEXT);
CREATE TABLE IF NOT EXISTS items (
    rel_path TEXT, item_key TEXT, config_fp TEXT, status TEXT, output BLOB,
    manifest_row TEXT, quarantine_row TEXT, run_id TEXT, seen_run TEXT,
    PRIMARY KEY (rel_path, item_key, config_fp));
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, run_dir TEXT, pid INTEGER, host TEXT, started REAL, status TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


def config_fingerprint(cfg: DictConfig) -> str:
    """A digest of everything that decides the output bytes (and the code that writes them): the config
    without the keys the schema marks as not changing the output (config/output_keys.py)."""
    from hermes_pipeline.config.output_keys import runtime_keys
    container = OmegaConf.to_container(cfg, resolve=True)
    for key in runtime_keys(cfg):
        node, parts = container, key.split(".")
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    for key, default in ADDED_LATER.items():
        section, name = key.split(".")
        if (container.get(section) or {}).get(name) == default:
            container[section].pop(name)
    blob = json.dumps({"version": __version__, "config": _named_as_fingerprinted(container)}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _named_as_fingerprinted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _named_as_fingerprinted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_named_as_fingerprinted(v) for v in value]
    return FINGERPRINT_NAMES.get(value, value) if isinstance(value, str) else value


@dataclass(frozen=True)
class Item:
    """One conversation (or quarantined record) as last committed."""
    status: str
    output: bytes | None
    manifest_row: dict | None
    quarantine_row: dict | None


def reusable(found: Item) -> bool:
    """Done before and done well: failures and fallbacks from a configured model are tried again."""
    row = found.manifest_row or {}
    fell_back = bool(row.get("fallback")) and row.get("summarizer") == "extractive"
    return found.status in ("compacted", "unchanged", "quarantined") and not fell_back


class OutputLocked(RuntimeError):
    """Another live run holds the output tree."""


class OutputLock:
    """An exclusive lock on an output tree, naming its holder."""

    def __init__(self, root: Path, run_dir: Path):
        folder = root / STATE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "lock"
        self.handle = open(self.path, "a+")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            for _ in range(20):      # the holder writes its name just after taking the lock
                self.handle.seek(0)
                holder = self.handle.read().strip()
                if holder:
                    break
                time.sleep(0.05)
            self.handle.close()
            holder = holder or "another run"
            raise OutputLocked(f"output.dir {root} is in use by {holder}; wait for it to finish") from None
        self.handle.seek(0)
        # a released lock is left empty: a name in it is a holder that died holding it
        self.taken_over_from = self.handle.read().strip() or None
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(f"pid {os.getpid()} on {socket.gethostname()}, run folder {run_dir}, "
                          f"started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        self.handle.flush()

    def release(self) -> None:
        if not self.handle.closed:
            self.handle.seek(0)
            self.handle.truncate()
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()


class IncrementalState:
    """The SQLite store; one connection, used by the run loop's thread only."""

    def __init__(self, root: Path, config_fp: str, run_id: str):
        folder = root / STATE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(folder / STATE_FILE), isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")   # a commit survives a killed process (not a power cut)
        self.db.executescript(SCHEMA)
        self.config_fp, self.run_id = config_fp, run_id
        self.pending_seen: list[tuple] = []    # reused items, marked in one transaction per file

    @contextmanager
    def _transaction(self):
        """BEGIN ... COMMIT (the connection is in autocommit mode: one statement, one commit)."""
        self.db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- runs -------------------------------------------------------------------

    def start_run(self, run_dir: Path) -> list[tuple[str, str]]:
        """Record this run; return (run_id, run_dir) of earlier runs that never finished."""
        unfinished = self.db.execute("SELECT run_id, run_dir FROM runs WHERE status = 'running'").fetchall()
        self.db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, 'running')",
                        (self.run_id, str(run_dir), os.getpid(), socket.gethostname(), time.time()))
        return unfinished

    def finish_run(self, status: str, run_id: str | None = None) -> None:
        self.db.execute("UPDATE runs SET status = ? WHERE run_id = ?", (status, run_id or self.run_id))

    def rows_of_run(self, run_id: str) -> list[tuple[dict | None, dict | None]]:
        """(manifest row, quarantine row) of everything a run committed."""
        found = self.db.execute("SELECT manifest_row, quarantine_row FROM items WHERE run_id = ?", (run_id,))
        return [(json.loads(m) if m else None, json.loads(q) if q else None) for m, q in found]

    # -- the input the tree mirrors ----------------------------------------------

    def input_root(self) -> str | None:
        """The input folder the last run read (its files' paths are relative to it), if any run did."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'input_root'").fetchone()
        return row[0] if row else None

    def set_input_root(self, root: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('input_root', ?)", (root,))

    # -- files ------------------------------------------------------------------

    def file_unchanged(self, rel_path: str, stat: os.stat_result, out_path: Path) -> int | None:
        """The number of items of a file whose input, config and output are as last written, else None."""
        row = self.db.execute("SELECT size, mtime_ns, config_fp, out_size, items FROM files WHERE rel_path = ?",
                              (rel_path,)).fetchone()
        if row is None or row[:3] != (stat.st_size, stat.st_mtime_ns, self.config_fp):
            return None
        out_size = out_path.stat().st_size if out_path.exists() else None
        return row[4] if out_size == row[3] else None

    def quarantined_items(self, rel_path: str) -> int:
        """Records of a file that an earlier run quarantined (under this config)."""
        return self.db.execute("SELECT COUNT(*) FROM items WHERE rel_path = ? AND config_fp = ? AND "
                               "status = 'quarantined'", (rel_path, self.config_fp)).fetchone()[0]

    def file_done(self, rel_path: str, stat: os.stat_result, out_size: int | None, items: int,
                  skippable: bool = True) -> int:
        """Record a finished file; forget items it no longer has. Returns how many conversations went away.

        A file that is not `skippable` is read again next time (its output size is recorded as unknown)."""
        with self._transaction():
            self.db.executemany("UPDATE items SET seen_run = ? WHERE rel_path = ? AND item_key = ? "
                                "AND config_fp = ?", self.pending_seen)
            self.pending_seen.clear()
            gone = self.db.execute(
                "SELECT COUNT(*) FROM items WHERE rel_path = ? AND config_fp = ? AND status IN "
                "('compacted', 'unchanged') AND (seen_run IS NULL OR seen_run != ?)",
                (rel_path, self.config_fp, self.run_id)).fetchone()[0]
            self.db.execute("DELETE FROM items WHERE rel_path = ? AND (config_fp != ? OR seen_run IS NULL "
                            "OR seen_run != ?)", (rel_path, self.config_fp, self.run_id))
            self.db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (rel_path, stat.st_size, stat.st_mtime_ns, self.config_fp,
                             out_size if skippable else -1, items, self.run_id))
        return gone

    def known_files(self) -> dict[str, int]:
        """rel_path -> items, of every file the tree has output for."""
        return dict(self.db.execute("SELECT rel_path, items FROM files").fetchall())

    def forget_file(self, rel_path: str) -> None:
        with self._transaction():
            self.db.execute("DELETE FROM files WHERE rel_path = ?", (rel_path,))
            self.db.execute("DELETE FROM items WHERE rel_path = ?", (rel_path,))

    # -- items ------------------------------------------------------------------

    def item(self, rel_path: str, key: str) -> Item | None:
        row = self.db.execute("SELECT status, output, manifest_row, quarantine_row FROM items "
                              "WHERE rel_path = ? AND item_key = ? AND config_fp = ?",
                              (rel_path, key, self.config_fp)).fetchone()
        if row is None:
            return None
        status, output, manifest_row, quarantine_row = row
        return Item(status, zlib.decompress(output) if output is not None else None,
                    json.loads(manifest_row) if manifest_row else None,
                    json.loads(quarantine_row) if quarantine_row else None)

    def seen(self, rel_path: str, key: str) -> None:
        """An item is still in the input (reused as it was); recorded with its file."""
        self.pending_seen.append((self.run_id, rel_path, key, self.config_fp))

    def commit(self, rel_path: str, key: str, status: str, output: bytes | None, manifest_row: dict | None,
               quarantine_row: dict | None) -> None:
        """One finished item, durable before anything else is written for it."""
        blob = zlib.compress(output, 1) if output is not None else None
        self.db.execute("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (rel_path, key, self.config_fp, status, blob, _json(manifest_row), _json(quarantine_row),
                         self.run_id, self.run_id))

    def close(self) -> None:
        self.db.close()


def _json(value: Any) -> str | None:
    return json.dumps(value) if value is not None else None
