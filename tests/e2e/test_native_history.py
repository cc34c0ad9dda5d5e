"""What a native write-back keeps of the input (output.native.history), and incremental runs on it.

keep: the output is every input line, byte for byte, then the compaction the agent
resumes from. drop: only what the agent needs; the manifest's `native` field
accounts for every input line as kept (byte for byte), rewritten (its message in
a new line) or removed. Both come out the same from run to run, and an
incremental run over an archive of sessions redoes only the session that grew.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from testkit.env import LONG_SESSIONS, read_jsonl, run_cli, shared

SESSIONS = {"claude-code": LONG_SESSIONS / "vsla-claude-sessions" / "0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl",
            "pi": LONG_SESSIONS / "agent-complex-task" / "03-raddit-dashboard-pr.session.jsonl"}
CONTEXT = "model.context_length=32000"


def numbers(ranges: str) -> list[int]:
    out = []
    for part in filter(None, ranges.split(",")):
        start, _, end = part.partition("-")
        out.extend(range(int(start), int(end or start) + 1))
    return out


def lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


def run(tmp_path: Path, source: Path, *overrides: str) -> tuple[dict, Path]:
    result = run_cli(tmp_path, f"input={source}", CONTEXT, *overrides)
    assert result.returncode in (0, 2), result.stderr
    (row,) = [r for r in read_jsonl(tmp_path / "manifest.jsonl") if r["status"] != "quarantined"]
    return row, tmp_path / "transcripts" / source.name


@pytest.mark.parametrize("agent", SESSIONS)
def test_keep_is_every_input_line_then_the_compaction(agent, tmp_path):
    source = shared(SESSIONS[agent])
    row, out = run(tmp_path, source)
    assert row["status"] == "compacted" and row["native"]["history"] == "keep"
    before, after = lines(source), lines(out)
    assert after[:len(before)] == before                      # broken lines too: the agent skips them as before
    assert numbers(row["native"]["lines_kept"]) == list(range(1, len(before) + 1))
    assert row["native"]["lines_added"] == len(after) - len(before) > 0
    assert row["native"]["lines_removed"] == row["native"]["lines_rewritten"] == ""


@pytest.mark.parametrize("agent", SESSIONS)
def test_drop_accounts_for_every_input_line(agent, tmp_path):
    source = shared(SESSIONS[agent])
    row, out = run(tmp_path / "drop", source, "output.native.history=drop")
    _, kept_out = run(tmp_path / "keep", source)
    native = row["native"]
    kept, rewritten, removed = (numbers(native[k]) for k in ("lines_kept", "lines_rewritten", "lines_removed"))
    every = list(range(1, len(lines(source)) + 1))
    assert sorted(kept + rewritten + removed) == every           # each input line exactly once
    assert kept and rewritten and removed
    written = set(lines(out))
    assert all(lines(source)[n - 1] in written for n in kept)     # the kept ones as they were
    assert not any(lines(source)[n - 1] in written for n in removed)
    assert len(lines(out)) == len(kept) + native["lines_added"]
    assert out.stat().st_size < kept_out.stat().st_size / 3
    again, out_again = run(tmp_path / "again", source, "output.native.history=drop")
    assert out_again.read_bytes() == out.read_bytes() and again["native"] == native    # the same, run to run


def test_incremental_runs_redo_only_the_session_that_grew(tmp_path):
    archive = tmp_path / "projects" / "-home-kenth56-vsla"
    archive.mkdir(parents=True)
    for path in sorted(shared(SESSIONS["claude-code"]).parent.glob("*.jsonl")):
        shutil.copyfile(path, archive / path.name)
    tree, args = tmp_path / "tree", (f"output.dir={tmp_path / 'tree'}", "incremental=true")
    run_cli(tmp_path / "one", f"input={tmp_path / 'projects'}", CONTEXT, *args)
    written = {p.relative_to(tree): p.read_bytes() for p in tree.rglob("*.jsonl")}
    assert set(written) == {Path(archive.name) / p.name for p in archive.glob("*.jsonl")}   # folder and names kept
    second = run_cli(tmp_path / "two", f"input={tmp_path / 'projects'}", CONTEXT, *args)
    assert second.returncode == 0 and read_jsonl(tmp_path / "two" / "manifest.jsonl") == []
    grown = archive / SESSIONS["claude-code"].name
    last = json.loads(lines(grown)[-1])
    with grown.open("a") as handle:           # the session went on: a new prompt, chained to the last line
        handle.write(json.dumps({**last, "parentUuid": last["uuid"], "uuid": "00000000-0000-4000-8000-000000000001",
                                 "type": "user", "isMeta": False, "timestamp": "2025-07-21T09:00:00.000Z",
                                 "message": {"role": "user", "content": "And now the slides, please."}}) + "\n")
    third = run_cli(tmp_path / "three", f"input={tmp_path / 'projects'}", CONTEXT, *args)
    assert third.returncode == 0, third.stderr
    assert [Path(r["source"]).name.split(":")[0] for r in read_jsonl(tmp_path / "three" / "manifest.jsonl")] \
        == [grown.name]
    for rel, data in written.items():
        if rel.name != grown.name:
            assert (tree / rel).read_bytes() == data
    assert lines(tree / Path(archive.name) / grown.name)[:len(lines(grown))] == lines(grown)


def test_fresh_ids_are_stable_and_take_what_real_logs_hold():
    from hermes_pipeline.formats.native import stable_hex, stable_uuid
    assert stable_uuid("session", "a\udc80b", 3) == stable_uuid("session", "a\udc80b", 3) != stable_uuid("session", 3)
    assert len(stable_hex(8, "\udcff")) == 8
