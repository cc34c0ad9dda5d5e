"""Hermes' session store (`$HERMES_HOME/state.db`, hermes-agent 0.19): its rows in, compactions back in place.

What the store holds, as hermes_state.SessionDB reads and writes it:
- `sessions`: one row per session (`id`, `system_prompt`, `started_at`, ...);
- `messages`: one row per message (`role`, `content` (a list or dict stored as
  "\\x00json:" + JSON), `tool_calls` (JSON), `tool_call_id`, `tool_name`,
  `timestamp`, reasoning fields...), `active` and `compacted` flags; the live
  history of a session is its `active = 1` rows in id order;
- `compression_locks`: one holder per session while a compaction runs (expired
  leases are taken over);
- `gateway_routing`: the gateway's index; each entry's `last_prompt_tokens` is
  what its session hygiene compares with 85% of the context.

A compaction is written back as Hermes' own in-place compaction
(`SessionDB.archive_and_compact`): under the session's compression lock, the
active rows become `active = 0, compacted = 1` (kept, and still found by
session search), the compacted messages are inserted as the new active rows,
`message_count`/`tool_call_count` count the live set, the stored system prompt
is the one the compaction wrote, and the gateway's `last_prompt_tokens` is reset
to 0 so its hygiene does not compact again at once (as the gateway does after
its own). Only the standard library is used: the store is read and written
without hermes-agent installed.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Iterator

JSON_PREFIX = "\x00json:"       # how SessionDB stores a list or dict content
LOCK_TTL = 300.0                # seconds, as Hermes' own compressions lease the lock
SQLITE_MAGIC = b"SQLite format 3\x00"
ROW_FIELDS = ("role", "content", "tool_call_id", "tool_calls", "tool_name", "effect_disposition", "timestamp",
              "token_count", "finish_reason", "reasoning", "reasoning_content", "reasoning_details",
              "codex_reasoning_items", "codex_message_items", "platform_message_id", "observed", "api_content")
JSON_COLUMNS = ("tool_calls", "reasoning_details", "codex_reasoning_items", "codex_message_items")


class StoreBusy(RuntimeError):
    """Another holder has the session's compression lock."""


def is_store(path: Path) -> bool:
    """A SQLite file with Hermes' sessions and messages tables."""
    try:
        with open(path, "rb") as handle:
            if handle.read(16) != SQLITE_MAGIC:
                return False
        with closing(connect(path, read_only=True)) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (OSError, sqlite3.Error):
        return False
    return {"sessions", "messages"} <= tables


def connect(path: Path, read_only: bool = False) -> sqlite3.Connection:
    uri = f"file:{Path(path).resolve()}?mode={'ro' if read_only else 'rw'}"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
    db.row_factory = sqlite3.Row
    return db


def decode_content(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(JSON_PREFIX):
        try:
            return json.loads(value[len(JSON_PREFIX):])
        except ValueError:
            return value
    return value


def encode_content(value: Any) -> Any:
    return value if value is None or isinstance(value, (str, int, float, bytes)) else JSON_PREFIX + json.dumps(value)


# -- reading ----------------------------------------------------------------------------


def session_rows(db: sqlite3.Connection) -> Iterator[tuple[dict, list[dict]]]:
    """(session row, its active message rows in id order), for every session that has any."""
    for session in db.execute("SELECT * FROM sessions ORDER BY started_at, id").fetchall():
        rows = db.execute("SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY id",
                          (session["id"],)).fetchall()
        if rows:
            yield dict(session), [dict(r) for r in rows]


def recorded_prompt_tokens(db: sqlite3.Connection, session_id: str) -> int | None:
    """The prompt size the gateway recorded for the session's last turn, if any (its hygiene's first choice)."""
    try:
        found = db.execute("SELECT entry_json FROM gateway_routing").fetchall()
    except sqlite3.Error:
        return None
    values = []
    for (entry,) in found:
        try:
            entry = json.loads(entry)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("session_id") == session_id:
            values.append(entry.get("last_prompt_tokens") or 0)
    return max(values) if values and max(values) > 0 else None


def row_message(row: dict) -> dict:
    """A message row as the OpenAI message Hermes loads it (get_messages_as_conversation), unstripped."""
    message = {"role": row["role"], "content": decode_content(row["content"])}
    for name in ("tool_call_id", "tool_name"):
        if row.get(name):
            message[name] = row[name]
    if row.get("tool_calls"):
        try:
            message["tool_calls"] = json.loads(row["tool_calls"])
        except ValueError:
            message["tool_calls"] = []
    if row["role"] == "assistant":
        for name in ("reasoning", "reasoning_content"):
            if row.get(name):
                message[name] = row[name]
    return message


def digest(session_id: str, system_prompt: str | None, rows: list[dict]) -> str:
    """What an incremental run compares: the session's live history (not row ids or times)."""
    fields = ("role", "content", "tool_call_id", "tool_calls", "tool_name")
    body = json.dumps([session_id, system_prompt, [[r.get(f) for f in fields] for r in rows]], default=str)
    return hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# -- writing back -----------------------------------------------------------------------------


def holder() -> str:
    return f"hermes-pipeline:pid={os.getpid()}:tid={threading.get_ident()}:{time.time_ns()}"


@contextmanager
def compression_lock(db: sqlite3.Connection, session_id: str, ttl: float = LOCK_TTL) -> Iterator[str]:
    """Hold the session's compression lock (Hermes' protocol: expired leases are taken over)."""
    me, now = holder(), time.time()
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DELETE FROM compression_locks WHERE session_id = ? AND expires_at < ?", (session_id, now))
        db.execute("INSERT OR IGNORE INTO compression_locks (session_id, holder, acquired_at, expires_at) "
                   "VALUES (?, ?, ?, ?)", (session_id, me, now, now + ttl))
        owner = db.execute("SELECT holder FROM compression_locks WHERE session_id = ?", (session_id,)).fetchone()
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    if owner is None or owner[0] != me:
        raise StoreBusy(f"session {session_id}: another compaction holds its lock ({owner[0] if owner else '?'})")
    try:
        yield me
    finally:
        db.execute("DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", (session_id, me))


def as_stored(row: dict) -> dict:
    """A row's fields as the messages table holds them (content and JSON columns encoded)."""
    values = {name: row.get(name) for name in ROW_FIELDS}
    values["content"] = encode_content(values["content"])
    for name in JSON_COLUMNS:
        if values[name] is not None and not isinstance(values[name], str):
            values[name] = json.dumps(values[name])
    values["observed"] = 1 if values["observed"] else 0
    return values


def _insert_row(db: sqlite3.Connection, session_id: str, row: dict) -> None:
    values = as_stored(row)
    columns = ", ".join(("session_id",) + ROW_FIELDS + ("active",))
    db.execute(f"INSERT INTO messages ({columns}) VALUES ({', '.join('?' * (len(ROW_FIELDS) + 2))})",
               (session_id, *values.values(), 1))


def _reset_prompt_tokens(db: sqlite3.Connection, session_id: str) -> int:
    """The gateway's last_prompt_tokens of the session, back to 0 (a fresh estimate next turn)."""
    try:
        entries = db.execute("SELECT scope, session_key, entry_json FROM gateway_routing").fetchall()
    except sqlite3.Error:
        return 0
    reset = 0
    for scope, key, entry_json in entries:
        try:
            entry = json.loads(entry_json)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("session_id") == session_id and entry.get("last_prompt_tokens"):
            entry["last_prompt_tokens"] = 0
            db.execute("UPDATE gateway_routing SET entry_json = ? WHERE scope = ? AND session_key = ?",
                       (json.dumps(entry), scope, key))
            reset += 1
    return reset


def apply(db: sqlite3.Connection, change: dict) -> str:
    """Write one session's compaction back under its lock; what happened, in a word
    ("compacted", or "skipped: ..." when the session changed since it was read)."""
    session_id = change["session_id"]
    with compression_lock(db, session_id):
        db.execute("BEGIN IMMEDIATE")
        try:
            live = [r[0] for r in db.execute("SELECT id FROM messages WHERE session_id = ? AND active = 1 "
                                             "ORDER BY id", (session_id,))]
            if live != change["replaces"]:
                db.execute("ROLLBACK")
                return "skipped: the session changed since it was read (or this compaction is in it already)"
            db.execute("UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1",
                       (session_id,))
            for row in change["rows"]:
                _insert_row(db, session_id, row)
            calls = sum(len(r["tool_calls"]) if isinstance(r.get("tool_calls"), list) else 0 for r in change["rows"])
            db.execute("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                       (len(change["rows"]), calls, session_id))
            if change.get("system_prompt") is not None:
                db.execute("UPDATE sessions SET system_prompt = ? WHERE id = ?", (change["system_prompt"], session_id))
            _reset_prompt_tokens(db, session_id)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return "compacted"


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of a live store (SQLite's online backup: safe while Hermes writes to it)."""
    with closing(connect(source, read_only=True)) as src, closing(sqlite3.connect(str(target))) as dst:
        src.backup(dst)
