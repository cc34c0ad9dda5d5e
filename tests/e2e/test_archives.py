"""Real-world archives that are not in the repository (tests/archives.py), through the real CLI.

Claude Code logs of other versions, a Hermes-based app's ShareGPT trajectories, an
Anthropic one-message-per-line export and pi session logs, with images, sub-agent
files, lines of several MB, comment lines and broken lines: the run finishes,
nothing is lost, every quarantined line says why, every written transcript is valid.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_pipeline.formats import MESSAGE, detect_format_in, get_format
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.transcript import Conversation, is_summary_message, pairing_problems
from testkit.accounting import check_accounting, read_rows
from testkit.archives import write_archive
from testkit.env import run_cli
from testkit.validity import written_problems

SEED = int(os.environ.get("HERMES_ARCHIVE_SEED", "7"))
MAX = 64 << 20


@pytest.fixture(scope="module")
def archive_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("archives")
    expected_bad = write_archive(root / "in", seed=SEED)
    result = run_cli(root / "run", f"input={root / 'in'}", "model.context_length=8000", "compression.protect_last_n=4")
    return result, root, expected_bad


def read(path: Path, fmt_name: str | None = None, layout: str | None = None):
    items = list(read_records(str(path), MAX))
    fmt, found_layout = detect_format_in(i.value for i in items if isinstance(i, Record))
    fmt = get_format(fmt_name) if fmt_name else fmt
    layout = layout or found_layout
    return fmt, layout, [c for c in fmt.read(iter(items), str(path), layout) if isinstance(c, Conversation)]


def without_ids(messages: list[dict]) -> list[dict]:
    """ShareGPT has no call ids: readers number them by position, so a compacted transcript
    numbers its calls differently. Compared without ids (results still pair by position)."""
    out = []
    for message in map(public, messages):
        if message.get("tool_calls"):
            message = {**message, "tool_calls": [{**c, "id": None} for c in message["tool_calls"]]}
        if "tool_call_id" in message:
            message = {**message, "tool_call_id": None}
        out.append(message)
    return out


def test_the_run_finishes_and_loses_nothing(archive_run):
    result, root, expected_bad = archive_run
    assert result.returncode == 2, result.stderr            # the broken and comment lines
    assert check_accounting(root / "run", sorted(expected_bad), {
        p: root / "run" / "transcripts" / p.relative_to(root / "in") for p in expected_bad}) == []


def test_only_the_broken_lines_are_quarantined_each_saying_why(archive_run):
    _, root, expected_bad = archive_run
    quarantined = read_rows(root / "run" / "quarantine.jsonl")
    for path, bad in expected_bad.items():
        mine = [q for q in quarantined if q["source"].rsplit(":", 1)[0] == str(path)]
        assert len(mine) == bad, path
        for q in mine:
            assert q["reason"].startswith(f"{path}:") and ("malformed JSON" in q["reason"]
                                                          or "comment line" in q["reason"]), q["reason"]
            assert q["raw"] and path.read_text().splitlines()[int(q["source"].rsplit(":", 1)[1]) - 1] == q["raw"]
    rows = read_rows(root / "run" / "manifest.jsonl")
    formats = {r["format"] for r in rows if r["status"] != "quarantined"}
    assert formats == {"claude-code", "sharegpt", "anthropic", "pi"}
    assert sum(r["status"] == "compacted" for r in rows) >= 10


def test_every_written_transcript_is_valid(archive_run):
    _, root, expected_bad = archive_run
    checked = 0
    for path in expected_bad:
        fmt, layout, before = read(path)
        out = root / "run" / "transcripts" / path.relative_to(root / "in")
        _, _, after = read(out, fmt.name, layout)    # Claude Code and pi sessions are written back as themselves
        assert len(after) == len(before), path
        for source, written in zip(before, after):
            source = repair_tool_pairing(source)
            view = without_ids if fmt.name == "sharegpt" else (lambda messages: [public(m) for m in messages])
            assert written_problems(fmt.name, view(source.messages), view(written.messages)) == [], (path, source.id)
            assert pairing_problems(written.messages) == []
            checked += any(is_summary_message(m) for m in written.messages)
    assert checked >= 10


def test_big_lines_images_and_sub_agents_came_through(archive_run):
    _, root, expected_bad = archive_run
    sizes = [max(len(x) for x in p.read_bytes().splitlines()) for p in expected_bad]
    assert max(sizes) > 4 << 20                               # a line of several MB was read, not refused
    by_name = {p.name: p for p in expected_bad}
    agent = by_name["agent-a1b2c3d4.jsonl"]
    (row,) = [r for r in read_rows(root / "run" / "manifest.jsonl") if r["source"].startswith(str(agent))]
    assert row["id"] == "agent-a1b2c3d4" and row["status"] in ("compacted", "unchanged")
    export = next(p for p in expected_bad if p.parent.name == "anthropic")
    _, layout, _ = read(export)
    assert layout == MESSAGE
    lines = read_rows(root / "run" / "transcripts" / "anthropic" / export.name)
    assert len(lines) > 5 and all(set(line) >= {"role", "content"} for line in lines)   # a message per line again
    v1 = next(p for p in expected_bad if p.parent.name == "claude-1.0")
    _, _, (written,) = read(root / "run" / "transcripts" / "claude-1.0" / v1.name)
    first = written.messages[0]["content"]
    assert any(b.get("type") == "image" and b["source"]["type"] == "base64" for b in first)   # the screenshot
