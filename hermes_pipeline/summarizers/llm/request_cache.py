"""Persistent request cache: a rerun or a resumed run never pays for the same summary twice.

It is also where batch results meet the conversations that need them: a batch's
answers are stored here with their usage (`via: batch`), and billed once, to the
first conversation that uses each (`claim`).

Keyed by sha256 of (provider, model, exact request JSON). The request holds
no credentials, so neither does the key or the file. One SQLite file, shared
by the threads of a run (one connection behind a lock) and by concurrent
processes (WAL journal, busy timeout).
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any


def request_key(provider: str, model: str, request: Any) -> str:
    blob = json.dumps({"provider": provider, "model": model, "request": request},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class RequestCache:
    def __init__(self, path: str | Path | None = ".hermes-cache/requests.sqlite",
                 enabled: bool = True):
        self.enabled = bool(enabled and path)
        self.path = Path(path).expanduser() if path else None
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False,
                                 isolation_level=None)
            if str(self.path) != ":memory:":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS requests ("
                       "key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)")
            self._db = db
        return self._db

    def get(self, key: str) -> dict | None:
        if not self.enabled:
            return None
        with self._lock:
            row = self._connect().execute(
                "SELECT value FROM requests WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return json.loads(row[0])

    def put(self, key: str, value: dict) -> None:
        if not self.enabled:
            return
        blob = json.dumps(value)   # ASCII escapes: lone surrogates cannot break the write
        with self._lock:
            self._connect().execute(
                "INSERT OR REPLACE INTO requests (key, value, created) VALUES (?, ?, ?)",
                (key, blob, time.time()))

    def claim(self, key: str) -> bool:
        """Mark a batch's answer as billed: True for the first caller only, in any process of the run
        (a batch item is paid once, by the conversation that uses it first)."""
        if not self.enabled:
            return False
        with self._lock:
            db = self._connect()
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT value FROM requests WHERE key = ?", (key,)).fetchone()
                value = json.loads(row[0]) if row else {}
                claimed = value.get("via") == "batch" and not value.get("billed")
                if claimed:
                    db.execute("UPDATE requests SET value = ? WHERE key = ?",
                               (json.dumps({**value, "billed": True}), key))
            finally:
                db.execute("COMMIT")
        return claimed

    def __len__(self) -> int:
        if not self.enabled:
            return 0
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM requests").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
