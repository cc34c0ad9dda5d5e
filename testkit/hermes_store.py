"""Hermes session stores built and read back by hermes-agent itself (hermes_state.SessionDB, the gateway).

The stores the tests compact are made with SessionDB's own writes (create_session,
append_message, the gateway routing index), and what a run wrote is read back
through Hermes' resume paths: SessionDB.get_messages_as_conversation and the
gateway's SessionStore.load_transcript (HERMES_HOME pointed at the store's folder).
"""
from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

LONG, SHORT, PICTURE = "20260101_090000_long01", "20260101_100000_short1", "20260101_110000_image1"
SYSTEM = "You are Hermes, a helpful agent."


def session_db(path: Path):
    try:
        import hermes_state
    except ImportError:      # CI installs it (make test): a missing one is an error to fix, not a skip
        pytest.fail("hermes-agent is not installed: `make venv` installs the hermes extra (pip install -e '.[hermes]')")
    return hermes_state.SessionDB(db_path=path)


def build_store(path: Path, steps: int = 40) -> Path:
    """Three sessions: a long tool-using one (with a recorded prompt size), a short one, one with an image."""
    db = session_db(path)
    try:
        for sid in (LONG, SHORT, PICTURE):
            db.create_session(sid, source="telegram", model="anthropic/claude-sonnet-4.6", system_prompt=SYSTEM)
        db.append_message(LONG, "user", "Build the weather CLI and test it. Use Python 3.12, never push to main.")
        for i in range(steps):
            call = {"id": f"call_{i}", "type": "function",
                    "function": {"name": "terminal", "arguments": json.dumps({"command": f"pytest tests/test_{i}.py"})}}
            db.append_message(LONG, "assistant", f"Running step {i}.", tool_calls=[call])
            db.append_message(LONG, "tool", f"step {i} marker-{i:03d}: " + "ok line\n" * 80,
                              tool_call_id=f"call_{i}", tool_name="terminal")
        db.append_message(LONG, "assistant", "All steps done.")
        db.append_message(LONG, "user", "Thanks, now write the README.")
        db.append_message(LONG, "assistant", "README written.")
        db.append_message(SHORT, "user", "What is 2 + 2?")
        db.append_message(SHORT, "assistant", "4.")
        db.append_message(PICTURE, "user", [{"type": "text", "text": "What is on this screenshot?"},
                                            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}])
        db.append_message(PICTURE, "assistant", "A terminal with a failing test.")
        entry = {"session_key": "telegram:42", "session_id": LONG, "last_prompt_tokens": 190_000,
                 "created_at": "2026-01-01T09:00:00", "updated_at": "2026-01-01T10:00:00"}
        db.save_gateway_routing_entry("telegram:42", json.dumps(entry))
    finally:
        db.close()
    return path


def rows(path: Path) -> list[tuple]:
    """Every message row and the lock and routing tables, for comparing a store before and after."""
    with closing(sqlite3.connect(path)) as db:
        found = db.execute("SELECT * FROM messages ORDER BY id").fetchall()
        found += db.execute("SELECT * FROM compression_locks").fetchall()
        found += db.execute("SELECT scope, session_key, entry_json FROM gateway_routing").fetchall()
        found += db.execute("SELECT id, system_prompt, message_count, tool_call_count FROM sessions").fetchall()
    return found


def resumed(path: Path, session_id: str) -> list[dict]:
    db = session_db(path)
    try:
        return db.get_messages_as_conversation(session_id)
    finally:
        db.close()


def gateway_transcript(path: Path, session_id: str, monkeypatch) -> list[dict]:
    """What the gateway loads to continue the session (SessionStore.load_transcript on HERMES_HOME's state.db)."""
    import hermes_state
    from gateway.config import GatewayConfig
    from gateway.session import SessionStore
    assert path.name == "state.db"
    monkeypatch.setenv("HERMES_HOME", str(path.parent))
    monkeypatch.setattr(hermes_state, "DEFAULT_DB_PATH", path)     # resolved when hermes_state was imported
    store = SessionStore(path.parent / "sessions", GatewayConfig())
    try:
        return store.load_transcript(session_id)
    finally:
        if store._db is not None:
            store._db.close()


def as_another_version(path: Path, version: int | None, prompts_moved: bool = False) -> Path:
    """A store made by hermes-agent 0.19.0 (schema_version 22), changed as another Hermes release leaves it: the
    schema_version it records (None: no schema_version table, as before Hermes kept one), and with
    `prompts_moved` the system prompts in a table of their own, no longer in `sessions` (as newer releases keep
    them). Synthetic: no store of another release can be shipped."""
    with closing(sqlite3.connect(path)) as db:
        if version is None:
            db.execute("DROP TABLE schema_version")
        else:
            db.execute("UPDATE schema_version SET version = ?", (version,))
        if prompts_moved:
            db.execute("CREATE TABLE session_system_prompts (session_id TEXT PRIMARY KEY REFERENCES sessions(id), "
                       "system_prompt TEXT NOT NULL)")
            db.execute("INSERT INTO session_system_prompts SELECT id, system_prompt FROM sessions "
                       "WHERE system_prompt IS NOT NULL")
            db.execute("ALTER TABLE sessions DROP COLUMN system_prompt")
        db.commit()
    return path
