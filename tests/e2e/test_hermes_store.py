"""Hermes' state.db in and out (issue 19 item 2), judged by hermes-agent itself.

A store made with SessionDB is compacted through the real command line; Hermes'
own resume paths (get_messages_as_conversation, the gateway's load_transcript)
must then give exactly the compacted history the same run writes as OpenAI
conversations, the archived rows must still be there and found by session
search, Hermes' compressor must take our summary as its previous summary, and a
second run with nothing new must change nothing.
"""
from __future__ import annotations

import json
import shutil

import pytest

from hermes_pipeline.formats.hermes_store.format import SUMMARY_PREFIX
from hermes_pipeline.transcript import COMPACTION_NOTE, text_of
from testkit.env import read_jsonl, run_cli
from testkit.hermes_store import (
    LONG,
    PICTURE,
    SHORT,
    SYSTEM,
    as_another_version,
    build_store,
    gateway_transcript,
    resumed,
    rows,
    session_db,
)
from testkit.validity import normalize

SMALL = ("model.context_length=8000", "compression.protect_last_n=4")


def _view(message: dict) -> dict:
    """What both sides must agree on: role, text, calls (Hermes strips text it loads; our summary row has its prefix)."""
    message = normalize(message)
    content = message.get("content")
    if isinstance(content, str):
        content = content.removeprefix(SUMMARY_PREFIX).strip()
    return {"role": message["role"], "content": content, "tool_calls": message.get("tool_calls"),
            "tool_call_id": message.get("tool_call_id")}


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    """One store, compacted into a copy (the default), and the same run's compactions as OpenAI conversations."""
    root = tmp_path_factory.mktemp("hermes-store")
    store = build_store(root / "home" / "state.db")
    before = rows(store)
    result = run_cli(root / "run", f"input={store}", *SMALL)
    assert result.returncode == 0, result.stderr
    as_openai = run_cli(root / "openai", f"input={store}", *SMALL, "output.format=openai")
    assert as_openai.returncode == 0, as_openai.stderr
    assert rows(store) == before                        # the input store is only read
    written = root / "run" / "transcripts" / "state.db"
    conversations = {r["id"]: r["messages"] for r in read_jsonl(root / "openai" / "transcripts" / "state.jsonl")}
    return root, store, written, read_jsonl(root / "run" / "manifest.jsonl"), conversations


def test_hermes_resumes_exactly_our_compacted_history(compacted, monkeypatch):
    root, store, written, manifest, ours = compacted
    status = {r["id"]: r["status"] for r in manifest}
    assert status == {LONG: "compacted", SHORT: "unchanged", PICTURE: "unchanged"}
    long_row = next(r for r in manifest if r["id"] == LONG)
    assert long_row["trigger"] == "hygiene" and long_row["tokens_recorded"] == 190_000   # the gateway's record
    assert long_row["native"]["rows_archived"] == 84 and long_row["native"]["rows_inserted"] == len(ours[LONG]) - 1
    for sid in (LONG, SHORT, PICTURE):
        expected = [_view(m) for m in ours[sid] if m["role"] != "system"]
        assert [_view(m) for m in resumed(written, sid)] == expected, sid
        assert [_view(m) for m in gateway_transcript(written, sid, monkeypatch)] == expected, sid
    db = session_db(written)
    try:
        session = db.get_session(LONG)
        assert session["system_prompt"] == text_of(ours[LONG][0]["content"]) and COMPACTION_NOTE in \
            session["system_prompt"] and SYSTEM in session["system_prompt"]
        assert session["message_count"] == long_row["native"]["rows_inserted"]
        assert db.get_session(SHORT)["system_prompt"] == SYSTEM
        # the archived rows: all there, inactive, found by session search
        every = db.get_messages(LONG, include_inactive=True)
        assert sum(not m["active"] and m["compacted"] for m in every) == 84
        gone = [i for i in range(40) if not any(f"marker-{i:03d}" in text_of(m["content"])
                                                for m in resumed(written, LONG))]
        assert gone
        hits = db.search_messages(f"marker-{gone[0]:03d}")
        assert any(h["session_id"] == LONG for h in hits)
        # the gateway's recorded prompt size is reset: its hygiene starts from a fresh estimate
        assert '"last_prompt_tokens": 0' in db.load_gateway_routing_entries()["telegram:42"]
        assert db._conn.execute("SELECT COUNT(*) FROM compression_locks").fetchone()[0] == 0
    finally:
        db.close()


def test_hermes_takes_our_summary_as_its_previous_summary(compacted):
    from agent.context_compressor import ContextCompressor
    _, _, written, _, ours = compacted
    history = resumed(written, LONG)
    index, body = ContextCompressor._find_latest_context_summary(history, 0, len(history))
    assert index is not None and history[index]["content"].startswith(SUMMARY_PREFIX)
    summary = next(text_of(m["content"]) for m in ours[LONG] if "## " in text_of(m["content"])
                   and m["role"] != "system")
    assert body.strip() == summary.strip()          # Hermes strips its prefix: the rest is ours, as written


def test_in_place_under_the_lock_and_a_second_run_changes_nothing(compacted, tmp_path):
    _, store, _, _, ours = compacted
    copy = tmp_path / "home" / "state.db"
    copy.parent.mkdir()
    shutil.copyfile(store, copy)
    first = run_cli(tmp_path / "one", f"input={copy}", *SMALL, "output.native.store=in_place")
    assert first.returncode == 0, first.stderr
    assert [_view(m) for m in resumed(copy, LONG)] == [_view(m) for m in ours[LONG] if m["role"] != "system"]
    assert not (tmp_path / "one" / "transcripts" / "state.db").exists()
    after_first = rows(copy)
    second = run_cli(tmp_path / "two", f"input={copy}", *SMALL, "output.native.store=in_place")
    assert second.returncode == 0, second.stderr
    assert rows(copy) == after_first
    assert {r["id"]: r["status"] for r in read_jsonl(tmp_path / "two" / "manifest.jsonl")}[LONG] == "unchanged"


def test_a_locked_session_is_left_alone(compacted, tmp_path):
    _, store, _, _, _ = compacted
    copy = tmp_path / "state.db"
    shutil.copyfile(store, copy)
    db = session_db(copy)
    try:
        assert db.try_acquire_compression_lock(LONG, "a-live-hermes", ttl_seconds=600)
    finally:
        db.close()
    before = rows(copy)
    result = run_cli(tmp_path / "run", f"input={copy}", *SMALL, "output.native.store=in_place")
    assert result.returncode == 0, result.stderr
    assert rows(copy) == before
    assert "another compaction holds its lock" in (tmp_path / "run" / "cli.log").read_text()


def test_incremental_runs_skip_a_store_with_no_new_rows(compacted, tmp_path):
    _, store, _, _, _ = compacted
    tree = tmp_path / "out"
    first = run_cli(tmp_path / "one", f"input={store}", *SMALL, f"output.dir={tree}", "incremental=true")
    assert first.returncode == 0, first.stderr
    output = (tree / "state.db").read_bytes()
    second = run_cli(tmp_path / "two", f"input={store}", *SMALL, f"output.dir={tree}", "incremental=true")
    assert second.returncode == 0, second.stderr
    summary = read_jsonl(tmp_path / "two" / "manifest.jsonl")
    assert summary == [] and (tree / "state.db").read_bytes() == output


def test_in_place_and_incremental_a_compacted_session_is_not_read_again(compacted, tmp_path):
    _, store, _, _, _ = compacted
    copy = tmp_path / "home" / "state.db"
    copy.parent.mkdir()
    shutil.copyfile(store, copy)
    args = (*SMALL, "output.native.store=in_place", f"output.dir={tmp_path / 'tree'}", "incremental=true")
    first = run_cli(tmp_path / "one", f"input={copy}", *args)
    assert first.returncode == 0, first.stderr
    assert {r["id"]: r["status"] for r in read_jsonl(tmp_path / "one" / "manifest.jsonl")}[LONG] == "compacted"
    after_first = rows(copy)
    second = run_cli(tmp_path / "two", f"input={copy}", *args)
    assert second.returncode == 0, second.stderr
    assert read_jsonl(tmp_path / "two" / "manifest.jsonl") == [] and rows(copy) == after_first   # all skipped
    db = session_db(copy)           # the session goes on: only it is read again
    try:
        db.append_message(SHORT, "user", "And 3 + 3?")
    finally:
        db.close()
    third = run_cli(tmp_path / "three", f"input={copy}", *args)
    assert third.returncode == 0, third.stderr
    assert [r["id"] for r in read_jsonl(tmp_path / "three" / "manifest.jsonl")] == [SHORT]


GATEWAY = "hermes-gateway-123"


def _locked_copy(store, copy):
    """A copy of the store whose long session a live Hermes gateway is compacting (its lock held)."""
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(store, copy)
    db = session_db(copy)
    try:
        assert db.try_acquire_compression_lock(LONG, GATEWAY, 3600)
    finally:
        db.close()
    return copy


def _listed_as_left_alone(run_dir):
    """The long session's row says it was left as it is and by whom; nothing counts it compacted."""
    row = {r["id"]: r for r in read_jsonl(run_dir / "manifest.jsonl")}[LONG]
    assert row["status"] == "unchanged" and GATEWAY in row["noop_reason"], row
    assert row["tokens_after"] == row["tokens_before"] and row["messages_after"] == row["messages_before"]
    assert row["native"] == {"history": "archived", "rows_archived": 0, "rows_inserted": 0}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["statuses"]["compacted"] == 0 and summary["tokens_after"] == summary["tokens_before"]
    assert "state.db: 3 unchanged" in (run_dir / "cli.log").read_text()


def test_a_locked_session_is_reported_as_left_alone_and_compacted_by_the_next_run(compacted, tmp_path):
    """In place and incremental, while a live Hermes holds the long session's lock; then the lock released."""
    _, store, _, _, ours = compacted
    copy = _locked_copy(store, tmp_path / "home" / "state.db")
    before = rows(copy)
    args = (*SMALL, "output.native.store=in_place", f"output.dir={tmp_path / 'tree'}", "incremental=true")
    first = run_cli(tmp_path / "one", f"input={copy}", *args)
    assert first.returncode == 0, first.stderr
    assert rows(copy) == before
    _listed_as_left_alone(tmp_path / "one")
    db = session_db(copy)
    try:
        db.release_compression_lock(LONG, GATEWAY)
    finally:
        db.close()
    second = run_cli(tmp_path / "two", f"input={copy}", *args)
    assert second.returncode == 0, second.stderr
    status = {r["id"]: r["status"] for r in read_jsonl(tmp_path / "two" / "manifest.jsonl")}
    assert status == {LONG: "compacted"}            # the others are done; the long one is compacted now
    assert [_view(m) for m in resumed(copy, LONG)] == [_view(m) for m in ours[LONG] if m["role"] != "system"]


def test_without_incremental_a_locked_session_is_not_counted_compacted(compacted, tmp_path):
    _, store, _, _, _ = compacted
    copy = _locked_copy(store, tmp_path / "state.db")
    result = run_cli(tmp_path / "run", f"input={copy}", *SMALL, "output.native.store=in_place")
    assert result.returncode == 0, result.stderr
    _listed_as_left_alone(tmp_path / "run")


# -- stores of other Hermes releases (issue 31 item 7) --------------------------------------------

KNOWS = "schema_version 22 (hermes-agent 0.19.0)"


def _store_copy(store, folder, version, prompts_moved=False):
    copy = folder / "home" / "state.db"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(store, copy)
    return as_another_version(copy, version, prompts_moved)


def test_a_store_of_another_schema_version_is_compacted_in_a_copy_saying_so(compacted, tmp_path):
    """Same tables and columns, another version: read and compacted into a copy, the run log naming both versions."""
    _, store, _, _, ours = compacted
    other = _store_copy(store, tmp_path, 23)
    before = other.read_bytes()
    result = run_cli(tmp_path / "run", f"input={other}", *SMALL)
    assert result.returncode == 0, result.stderr
    assert {r["id"]: r["status"] for r in read_jsonl(tmp_path / "run" / "manifest.jsonl")}[LONG] == "compacted"
    written = tmp_path / "run" / "transcripts" / "state.db"
    assert [_view(m) for m in resumed(written, LONG)] == [_view(m) for m in ours[LONG] if m["role"] != "system"]
    log = (tmp_path / "run" / "cli.log").read_text()
    assert f"{other}: a Hermes store of schema_version 23, which this release was not tested with (it knows " \
        f"{KNOWS})" in log
    assert other.read_bytes() == before


@pytest.mark.parametrize("version, prompts_moved, said", [
    (23, False, "is a Hermes store of schema_version 23"),
    (24, True, "is a Hermes store of schema_version 24"),
    (22, True, "is a Hermes store of schema_version 22, sessions.system_prompt missing"),
    (None, False, "is a Hermes store of no schema_version"),
], ids=["newer-version", "prompts-moved", "version-22-other-layout", "no-version"])
def test_in_place_into_a_store_of_a_layout_this_release_does_not_know_is_refused(compacted, tmp_path, version,
                                                                                 prompts_moved, said):
    _, store, _, _, _ = compacted
    other = _store_copy(store, tmp_path, version, prompts_moved)
    before, content = other.read_bytes(), rows(other) if not prompts_moved else None
    result = run_cli(tmp_path / "run", f"input={other}", *SMALL, "output.native.store=in_place")
    assert result.returncode == 1, result.stderr
    assert f"output.native.store=in_place: {other} {said}" in result.stderr, result.stderr
    assert f"this release knows {KNOWS} only" in result.stderr and "Traceback" not in result.stderr
    assert other.read_bytes() == before and (prompts_moved or rows(other) == content)
    assert not (tmp_path / "run" / "manifest.jsonl").exists()              # nothing read


def test_a_store_whose_layout_moved_is_set_aside_naming_the_file_and_nothing_is_written(compacted, tmp_path):
    """The system prompts in a table of their own: the reader would load every session without its prompt, and
    the writer could not store the compaction's; so its copy is not made either: one quarantine entry says why."""
    _, store, _, _, _ = compacted
    other = _store_copy(store, tmp_path, 24, prompts_moved=True)
    before = other.read_bytes()
    result = run_cli(tmp_path / "run", f"input={other}", *SMALL)
    assert result.returncode == 2, result.stderr
    [entry] = read_jsonl(tmp_path / "run" / "quarantine.jsonl")
    assert entry["source"] == f"{other}:0"
    assert f"{other}:0: a Hermes store of schema_version 24 that this release cannot read " \
           f"(sessions.system_prompt missing; it knows {KNOWS}); nothing read or written" in entry["reason"]
    assert [r["status"] for r in read_jsonl(tmp_path / "run" / "manifest.jsonl")] == ["quarantined"]
    assert not (tmp_path / "run" / "transcripts" / "state.db").exists() and other.read_bytes() == before
