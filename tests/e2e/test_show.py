"""`hermes-pipeline-show RUN_DIR ID` through the real command lines, on real transcripts (tests/data/real):
one conversation before and after, the removed span marked, the summary in full, its quality row; for a
dry run too (its "after" computed again, the same as a real run writes)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_pipeline.transcript import is_summary_message, message_text
from testkit.env import REAL, TAU_BENCH, read_jsonl, run_cli
from testkit.sessions import read_conversations as read_back

SHOW = Path(sys.executable).with_name("hermes-pipeline-show")     # the installed console script
SMALL = ("model.context_length=4000", "compression.protect_last_n=4")
NUMBERED = re.compile(r"^(- |» |  )[ \d]{4}(\d) ")


def show(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    assert SHOW.exists(), f"{SHOW} is missing: run `make venv` (pip install -e .)"
    return subprocess.run([str(SHOW), str(run_dir), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run and a dry run of the same real transcripts (Claude Code logs and tau-bench conversations)."""
    folder = tmp_path_factory.mktemp("show")
    for name, extra in (("real", ()), ("dry", ("dry_run=true",))):
        result = run_cli(folder / name, f"input={REAL}", *SMALL, *extra)
        assert result.returncode in (0, 2), result.stderr
    return folder / "real", folder / "dry"


def sections(text: str) -> dict[str, list[str]]:
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("── "):
            current = line.removesuffix(" ──").split(":")[0].removeprefix("── ").split(" · ")[0]
            out[current] = [line]
        elif current is not None:
            out[current].append(line)
    return out


def written(run_dir: Path, row: dict) -> list[dict]:
    """The conversation as written, read back by its format's reader (a Claude Code log is a Claude Code
    session again)."""
    path = Path(row["source"].rsplit(":", 1)[0])
    found = [c for c in read_back(run_dir / "transcripts" / path.relative_to(REAL), repaired=False)
             if c.id == row["id"]]
    return found[0].messages


def test_before_and_after_with_the_removed_span_marked_the_summary_and_its_quality(runs):
    real, _ = runs
    rows = [r for r in read_jsonl(real / "manifest.jsonl") if r["status"] == "compacted"]
    formats = {}
    for row in rows:
        formats.setdefault(row["format"], row)
    assert {"claude-code", "openai"} <= set(formats)
    for row in formats.values():
        result = show(real, row["id"], "--source", row["source"])
        assert result.returncode == 0, result.stderr
        parts = sections(result.stdout)
        assert parts[row["id"]][0].startswith(f"── {row['id']} · {row['source']} · {row['format']} · compacted")
        start, end = row["removed_span"]
        before = [line for line in parts["before"][1:] if NUMBERED.match(line)]
        assert len(before) == row["messages_before"]
        assert [line.startswith("- ") for line in before] == [start <= k < end for k in range(len(before))]
        assert f"messages {start}-{end - 1} removed ({end - start})" in parts["before"][0]
        messages = written(real, row)
        after = [line for line in parts["after"][1:] if NUMBERED.match(line)]
        assert len(after) == row["messages_after"] == len(messages)
        summary = next(m for m in messages if is_summary_message(m))
        text = "\n".join(parts["after"])
        lines = [s for s in message_text(summary).splitlines() if s.strip()]
        assert len(lines) > 10 and all(line in text for line in lines)       # the summary, in full
        assert parts["quality of what was removed"][1].startswith(f"  score {row['quality']['score']:.3f} · ")


def test_a_dry_runs_after_is_what_a_real_run_writes(runs):
    real, dry = runs
    rows = {r["source"]: r for r in read_jsonl(real / "manifest.jsonl") if r["status"] == "compacted"}
    dry_rows = [r for r in read_jsonl(dry / "manifest.jsonl") if r["status"] == "compacted"]
    assert not (dry / "transcripts").exists() and len(dry_rows) == len(rows)
    for dry_row in dry_rows[:4]:
        shown_dry = show(dry, dry_row["id"], "--source", dry_row["source"])
        shown_real = show(real, dry_row["id"], "--source", dry_row["source"])
        assert shown_dry.returncode == shown_real.returncode == 0, shown_dry.stderr + shown_real.stderr
        assert "computed again: a dry run writes no transcripts" in shown_dry.stdout
        after = lambda out: [line for line in sections(out)["after"][1:]]
        assert after(shown_dry.stdout) == after(shown_real.stdout)


def test_an_unchanged_conversation_says_why_and_an_unknown_one_is_refused(runs, tmp_path):
    real, _ = runs
    unchanged = next(r for r in read_jsonl(real / "manifest.jsonl") if r["status"] == "unchanged")
    result = show(real, unchanged["source"])                   # a source FILE:LINE names it too
    assert result.returncode == 0, result.stderr
    assert f"unchanged: {unchanged['noop_reason']}" in result.stdout and "── after" not in result.stdout
    missing = show(real, "no-such-conversation")
    assert missing.returncode == 1 and "no conversation 'no-such-conversation' in" in missing.stderr
    assert show(tmp_path, "x").returncode == 1                  # not a run folder


def test_an_unknown_id_lists_a_quarantined_record_by_its_source(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("{not json\n")
    (tmp_path / "in" / "b.jsonl").write_bytes(TAU_BENCH.read_bytes())
    assert run_cli(tmp_path / "run", f"input={tmp_path / 'in'}").returncode == 2
    missing = show(tmp_path / "run", "no-such-conversation")
    assert missing.returncode == 1 and f"its ids: {tmp_path / 'in' / 'a.jsonl'}:1, airline-" in missing.stderr
    assert "None" not in missing.stderr


def test_show_and_the_main_command_start_without_rich():
    """rich costs a sixth of a short run's start-up; the commands draw their own text."""
    code = ("import sys, hermes_pipeline.cli, hermes_pipeline.show, hermes_pipeline.engine.lcm.cli; "
            "print(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr
