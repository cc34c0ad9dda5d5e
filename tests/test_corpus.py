"""Every file of the shared corpus through the real command line, format detected per file.

With a context small enough to compact most of it: nothing quarantined, every output
valid (read back with the format readers: tool pairing and the role rule, head and
tail kept), and reading then writing without compaction gives the input back.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from accounting import check_accounting
from conftest import CORPUS, read_jsonl, run_cli
from hermes_pipeline.formats import CONVERSATION, detect_format_in, get_format
from hermes_pipeline.formats.lossless import public
from hermes_pipeline.io import Record, read_records
from hermes_pipeline.repair import repair_tool_pairing
from hermes_pipeline.transcript import Conversation, is_summary_message
from validity import problems

MAX = 64 << 20
FILES = sorted(CORPUS.rglob("*.jsonl"))


def expected_format(path: Path) -> str:
    return "openai" if path.parent.name == "tau-bench" else "claude-code"


def read(path: Path, fmt_name: str | None = None, layout: str | None = None) -> list[Conversation]:
    items = list(read_records(str(path), MAX))
    found = detect_format_in(i.value for i in items if isinstance(i, Record))
    fmt = get_format(fmt_name) if fmt_name else found[0]
    return [c for c in fmt.read(iter(items), str(path), layout or found[1]) if isinstance(c, Conversation)]


def output_of(run_dir: Path, path: Path) -> Path:
    return run_dir / "transcripts" / path.relative_to(CORPUS)


def read_output(run_dir: Path, path: Path) -> list[Conversation]:
    """The written conversations, read back (Claude Code logs are written as Anthropic)."""
    writer = get_format(expected_format(path))
    name = writer.name if writer.writable else writer.write_as
    return read(output_of(run_dir, path), name, CONVERSATION)


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    assert len(FILES) == 11, f"the shared corpus is missing at {CORPUS}"
    run_dir = tmp_path_factory.mktemp("corpus") / "run"
    result = run_cli(run_dir, f"input={CORPUS}", "input.format=auto", "model.context_length=4000",
                     "compression.protect_last_n=4")
    return result, run_dir


@pytest.fixture(scope="module")
def uncompacted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("corpus-plain") / "run"
    result = run_cli(run_dir, f"input={CORPUS}", "compression.enabled=false")
    return result, run_dir


def test_nothing_quarantined_and_most_of_it_compacted(compacted):
    result, run_dir = compacted
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
    outputs = {p: output_of(run_dir, p) for p in FILES}
    assert check_accounting(run_dir, FILES, outputs) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:32])
def test_every_output_is_valid(compacted, path):
    _, run_dir = compacted
    before = read(path)
    after = read_output(run_dir, path)
    assert len(after) == len(before)
    for source, written in zip(before, after):
        repair_tool_pairing(source)          # what the run did before compacting (stubs, if any)
        assert problems([public(m) for m in source.messages], [public(m) for m in written.messages]) == [], source.id
        assert written.id == source.id


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:32])
def test_written_outputs_round_trip_exactly(compacted, path):
    """What the run wrote reads back and writes out unchanged (Anthropic for Claude Code logs)."""
    _, run_dir = compacted
    out = output_of(run_dir, path)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    writer = get_format(expected_format(path))
    fmt = writer if writer.writable else get_format(writer.write_as)
    assert [next(fmt.write(c, CONVERSATION)) for c in read(out, fmt.name, CONVERSATION)] == records
    assert any(is_summary_message(m) for r in records for m in r["messages"]) or len(records) == 1


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:32])
def test_without_compaction_the_input_comes_back(uncompacted, path):
    result, run_dir = uncompacted
    assert result.returncode == 0, result.stderr
    before = read(path)
    out = output_of(run_dir, path)
    if expected_format(path) == "openai":
        assert read_jsonl(out) == read_jsonl(path)
    after = read_output(run_dir, path)
    assert [[public(m) for m in c.messages] for c in after] == [[public(m) for m in c.messages] for c in before]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:32])
def test_round_trips_through_openai_anthropic_and_sharegpt(path):
    """Each corpus conversation written in each writable format reads back and writes out exactly."""
    for conversation in read(path):
        for name in ("openai", "anthropic", "sharegpt"):
            fmt = get_format(name)
            (record,) = list(fmt.write(conversation, CONVERSATION))
            record = json.loads(json.dumps(record))
            (again,) = [c for c in fmt.read(iter([Record("mem", 1, record, 0)]), "mem", CONVERSATION)
                        if isinstance(c, Conversation)]
            assert next(fmt.write(again, CONVERSATION)) == record, (conversation.id, name)
