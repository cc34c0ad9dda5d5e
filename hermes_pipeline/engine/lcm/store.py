"""The lcm engine's store: every original, content-addressed, in one SQLite file.

An object's id is the SHA-256 of its canonical JSON (keys sorted, no
whitespace, UTF-8; what orjson can't write exactly, NaN or a lone surrogate,
is written by the standard library with ASCII escapes), so the same content
always gets the same id and a stored id never changes or moves. Objects are
never updated or deleted: a pointer handed out once stays valid.

Kinds of object:
  record     a conversation as it was read (see engine.input_record)
  span       messages a compaction removed: {"kind": "span", "conversation",
             "record", "source", "start", "end", "lines", "messages"}; grep
             searches their text ("lines": the input line of each message, or null)
  compacted  a conversation as compacted: {"kind": "compacted", "conversation",
             "source", "record", "pointers", "messages"}
The conversations table names the conversation and input of each record and
compacted object.

The file is in WAL mode; one connection per process, shared by the run's
threads under a lock, and a busy timeout for worker processes writing at once.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import orjson

from hermes_pipeline.inputs.jsonl import _has_nan, dumps

POINTER = re.compile(r"lcm:([0-9a-f]{64})")
BUSY_TIMEOUT_MS = 60_000
SNIPPET_BEFORE, SNIPPET_AFTER = 40, 100

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    id   TEXT PRIMARY KEY,      -- sha256 of the canonical JSON
    kind TEXT NOT NULL,         -- record | span
    body BLOB NOT NULL          -- zlib of the JSON as read (key order kept)
);
CREATE TABLE IF NOT EXISTS texts (      -- what grep searches: one row per stored message
    object_id TEXT NOT NULL,
    idx       INTEGER NOT NULL,         -- the message's index in the conversation it was removed from
    text      TEXT NOT NULL,
    PRIMARY KEY (object_id, idx)
);
CREATE TABLE IF NOT EXISTS conversations (   -- which input each record (or compacted object) came from
    record_id       TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    source          TEXT NOT NULL,
    format          TEXT,
    PRIMARY KEY (record_id, source)
);
"""


def canonical(value: Any) -> bytes:
    if not _has_nan(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            pass     # lone surrogates, huge integers
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def object_id(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def strings_in(value: Any) -> Iterator[str]:
    """Every string leaf of a JSON value, in order (what a message says, tool arguments included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def message_text(message: Any) -> str:
    """What grep searches in a message: its string leaves, without the readers' round-trip marks
    (`_anthropic`...), whose copy of a whole source message would make one piece match its siblings' text."""
    if isinstance(message, dict):
        message = {k: v for k, v in message.items() if not (isinstance(k, str) and k.startswith("_"))}
    return "\n".join(strings_in(message))


@dataclass(frozen=True)
class Hit:
    object_id: str
    index: int
    snippet: str


@lru_cache(maxsize=64)
def _compiled(pattern: str, flags: int) -> re.Pattern:
    return re.compile(pattern, flags)


def _regexp(pattern: str, flags: int, text: str) -> bool:
    return _compiled(pattern, flags).search(text) is not None


def snippet(text: str, match: re.Match) -> str:
    """The match with some context, on one line (grep prints tab-separated fields)."""
    start, end = max(match.start() - SNIPPET_BEFORE, 0), min(match.end() + SNIPPET_AFTER, len(text))
    piece = " ".join(text[start:end].split())
    return ("…" if start else "") + piece + ("…" if end < len(text) else "")


class LCMStore:
    def __init__(self, path: Path | str, readonly: bool = False):
        """readonly: the store must exist already (for reading); nothing is written through it then."""
        self.path = Path(path)
        self.readonly = readonly
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    # -- the connection ----------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """Opened on first use, and again in a forked worker (a connection must not cross a fork)."""
        if self._conn is None or self._pid != os.getpid():
            if self.readonly and not self.path.is_file():    # reading never creates a store
                raise FileNotFoundError(f"no lcm store at {self.path}")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                   timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if not self.readonly:
                self._set_up(conn)
            conn.create_function("lcm_regexp", 3, _regexp, deterministic=True)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the tables. Switching the journal mode fails at once with "database is locked"
        (SQLite does not busy-wait there) while another connection opens the same store: retried until
        the busy timeout. (No flock on the file: closing any descriptor of it drops SQLite's own locks.)"""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(SCHEMA)
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # -- writing -----------------------------------------------------------------

    def put(self, kind: str, value: Any, texts: list[tuple[int, str]] = (),
            conversation: tuple[str, str, str | None] | None = None) -> str:
        """Store a value (once: the same content is the same object); its id."""
        oid = object_id(value)
        body = zlib.compress(dumps(value), 6)     # hashing and compressing outside the lock
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("INSERT OR IGNORE INTO objects (id, kind, body) VALUES (?, ?, ?)", (oid, kind, body))
                conn.executemany("INSERT OR IGNORE INTO texts (object_id, idx, text) VALUES (?, ?, ?)",
                                 [(oid, index, text) for index, text in texts])
                if conversation is not None:
                    conn.execute("INSERT OR IGNORE INTO conversations VALUES (?, ?, ?, ?)", (oid, *conversation))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return oid

    # -- reading -----------------------------------------------------------------

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._connection().execute(sql, args).fetchall()

    def resolve(self, pointer: str) -> str:
        """The full id of `lcm:<id>`, `<id>` or a unique prefix of at least 8 hex digits."""
        key = pointer.strip().removeprefix("lcm:").lower()
        if not re.fullmatch(r"[0-9a-f]{8,64}", key):
            raise KeyError(f"{pointer!r} is not an lcm pointer (lcm:<sha256 hex>)")
        found = [row[0] for row in self._query("SELECT id FROM objects WHERE id >= ? AND id <= ? LIMIT 2",
                                               (key, key + "g"))]
        if len(found) != 1:
            raise KeyError(f"{pointer!r}: {'no such object' if not found else 'ambiguous prefix'} in {self.path}")
        return found[0]

    def get_json(self, pointer: str) -> bytes:
        """The stored JSON of an object, exactly as it was stored (one line, no newline)."""
        oid = self.resolve(pointer)
        (body,) = self._query("SELECT body FROM objects WHERE id = ?", (oid,))[0]
        return zlib.decompress(body)

    def get(self, pointer: str) -> Any:
        return json.loads(self.get_json(pointer))

    def kind(self, pointer: str) -> str:
        return self._query("SELECT kind FROM objects WHERE id = ?", (self.resolve(pointer),))[0][0]

    def grep(self, pattern: str, fixed: bool = False, ignore_case: bool = False, limit: int | None = None) -> list[Hit]:
        """Stored messages whose text matches a regular expression (or a fixed string), in storage order."""
        regex = re.escape(pattern) if fixed else pattern
        flags = re.IGNORECASE if ignore_case else 0
        compiled = _compiled(regex, flags)     # a bad pattern fails here, with re's message
        sql = "SELECT object_id, idx, text FROM texts WHERE "
        sql += "instr(text, ?) > 0" if fixed and not ignore_case else "lcm_regexp(?, ?, text)"
        args: tuple = (pattern,) if fixed and not ignore_case else (regex, flags)
        sql += " ORDER BY rowid" + (f" LIMIT {int(limit)}" if limit else "")
        return [Hit(oid, index, snippet(text, compiled.search(text))) for oid, index, text in self._query(sql, args)]

    def conversations(self, kind: str = "record", conversation_id: str | None = None) -> list[tuple]:
        """(object id, conversation id, source, format) of every stored conversation as read (kind "record"),
        or as compacted ("compacted"), oldest first; of one conversation id only, if given."""
        sql = ("SELECT c.record_id, c.conversation_id, c.source, c.format FROM conversations c "
               "JOIN objects o ON o.id = c.record_id WHERE o.kind = ?")
        if conversation_id is None:
            return self._query(sql + " ORDER BY c.rowid", (kind,))
        return self._query(sql + " AND c.conversation_id = ? ORDER BY c.rowid", (kind, conversation_id))

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return self._query("SELECT count(*) FROM objects")[0][0]
        return self._query("SELECT count(*) FROM objects WHERE kind = ?", (kind,))[0][0]
