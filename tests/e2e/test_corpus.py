"""Every real transcript through the real command line, format detected per file.

Two collections: the real files kept in the repository (always), and the whole
shared corpus beside it (CI; skipped, saying why, when absent).

With a context small enough to compact most of it: nothing quarantined, every output
valid (read back with the format readers: tool pairing and the role rule, head and
tail kept), and reading then writing without compaction gives the input back.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_pipeline.formats import CONVERSATION, detect_format_in, get_format
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.inputs.jsonl import Record, encode_lines, read_records
from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.transcript import Conversation, is_summary_message
from testkit.accounting import check_accounting
from testkit.env import CORPUS, REAL, read_jsonl, run_cli, shared
from testkit.validity import problems

MAX = 64 << 20
COLLECTIONS = {"repo": REAL, "shared": CORPUS}
# (collection, file) pairs of every collection that is here
FILES = [(name, path) for name, root in COLLECTIONS.items() if root.exists() for path in sorted(root.rglob("*.jsonl"))]
ids = lambda item: f"{item[0]}-{item[1].name[:28]}" if isinstance(item, tuple) else str(item)


def test_the_shared_corpus_is_here():
    assert len(list(shared(CORPUS).rglob("*.jsonl"))) == 11


def expected_format(path: Path) -> str:
    return "openai" if path.parent.name == "tau-bench" else "claude-code"


def read(path: Path, fmt_name: str | None = None, layout: str | None = None) -> list[Conversation]:
    items = list(read_records(str(path), MAX))
    found = detect_format_in(i.value for i in items if isinstance(i, Record))
    fmt = get_format(fmt_name) if fmt_name else found[0]
    return [c for c in fmt.read(iter(items), str(path), layout or found[1]) if isinstance(c, Conversation)]


def output_of(run_dir: Path, path: Path) -> Path:
    root = next(r for r in COLLECTIONS.values() if path.is_relative_to(r))
    return run_dir / "transcripts" / path.relative_to(root)


def read_output(run_dir: Path, path: Path) -> list[Conversation]:
    """The written conversations, read back by the reader of their format (a Claude Code log is written
    back as a Claude Code session, compacted the way Claude Code compacts itself)."""
    return read(output_of(run_dir, path))


def lines_of(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


_runs: dict = {}


def compacted(tmp_path_factory, collection: str):
    """One run per collection at a context small enough to compact most of it."""
    if ("compacted", collection) not in _runs:
        run_dir = tmp_path_factory.mktemp(f"corpus-{collection}") / "run"
        result = run_cli(run_dir, f"input={COLLECTIONS[collection]}", "input.format=auto",
                         "model.context_length=4000", "compression.protect_last_n=4")
        _runs["compacted", collection] = result, run_dir
    return _runs["compacted", collection]


def uncompacted(tmp_path_factory, collection: str):
    if ("plain", collection) not in _runs:
        run_dir = tmp_path_factory.mktemp(f"corpus-plain-{collection}") / "run"
        _runs["plain", collection] = run_cli(run_dir, f"input={COLLECTIONS[collection]}",
                                             "compression.enabled=false"), run_dir
    return _runs["plain", collection]


@pytest.mark.parametrize("collection", [c for c, root in COLLECTIONS.items() if root.exists()])
def test_nothing_quarantined_and_most_of_it_compacted(tmp_path_factory, collection):
    result, run_dir = compacted(tmp_path_factory, collection)
    assert result.returncode == 0, result.stderr
    assert (run_dir / "quarantine.jsonl").read_text() == ""
    rows = read_jsonl(run_dir / "manifest.jsonl")
    assert {r["status"] for r in rows} <= {"compacted", "unchanged"}
    assert sum(r["status"] == "compacted" for r in rows) >= 0.75 * len(rows)
    for row in rows:
        path = Path(row["source"].rsplit(":", 1)[0])
        assert row["format"] == expected_format(path)
        if row["format"] == "claude-code" and row["messages_before"] > 20:
            assert row["status"] == "compacted", row["source"]
    files = [p for c, p in FILES if c == collection]
    assert check_accounting(run_dir, files, {p: output_of(run_dir, p) for p in files}) == []


@pytest.mark.parametrize("item", FILES, ids=ids)
def test_every_output_is_valid(tmp_path_factory, item):
    collection, path = item
    _, run_dir = compacted(tmp_path_factory, collection)
    before = read(path)
    after = read_output(run_dir, path)
    assert len(after) == len(before)
    for source, written in zip(before, after):
        source = repair_tool_pairing(source)          # what the run did before compacting (stubs, if any)
        native = get_format(source.format).native
        assert problems([public(m) for m in source.messages], [public(m) for m in written.messages],
                        users_combined=native) == [], source.id
        assert written.id == source.id


@pytest.mark.parametrize("item", FILES, ids=ids)
def test_written_outputs_round_trip_exactly(tmp_path_factory, item):
    """What the run wrote reads back and writes out unchanged, byte for byte."""
    collection, path = item
    _, run_dir = compacted(tmp_path_factory, collection)
    out = output_of(run_dir, path)
    items = list(read_records(str(out), MAX))
    fmt, layout = detect_format_in(i.value for i in items)
    assert fmt.name == expected_format(path)
    conversations = [c for c in fmt.read(iter(items), str(out), layout) if isinstance(c, Conversation)]
    # a conversation left as it was is written as the line it was read from (run/conversation_job.py)
    as_run_writes = lambda c: c.raw_line.rstrip(b"\n") + b"\n" if c.raw_line is not None and not c.notes \
        else encode_lines(fmt.write(c, layout))
    assert b"".join(as_run_writes(c) for c in conversations) == out.read_bytes()
    assert any(is_summary_message(m) for c in conversations for m in c.messages) or lines_of(out) == lines_of(path)


@pytest.mark.parametrize("item", FILES, ids=ids)
def test_without_compaction_the_input_comes_back(tmp_path_factory, item):
    collection, path = item
    result, run_dir = uncompacted(tmp_path_factory, collection)
    assert result.returncode == 0, result.stderr
    before = read(path)
    out = output_of(run_dir, path)
    if expected_format(path) == "openai":
        assert read_jsonl(out) == read_jsonl(path)
    else:       # a session written back as itself: its lines as they were
        assert lines_of(out) == lines_of(path)
    after = read_output(run_dir, path)
    assert [[public(m) for m in c.messages] for c in after] == [[public(m) for m in c.messages] for c in before]


@pytest.mark.parametrize("item", FILES, ids=ids)
def test_round_trips_through_openai_anthropic_and_sharegpt(item):
    """Each corpus conversation written in each writable format reads back and writes out exactly."""
    _, path = item
    for conversation in read(path):
        for name in ("openai", "anthropic", "sharegpt"):
            fmt = get_format(name)
            (record,) = list(fmt.write(conversation, CONVERSATION))
            record = json.loads(json.dumps(record))
            (again,) = [c for c in fmt.read(iter([Record("mem", 1, record, 0)]), "mem", CONVERSATION)
                        if isinstance(c, Conversation)]
            assert next(fmt.write(again, CONVERSATION)) == record, (conversation.id, name)
