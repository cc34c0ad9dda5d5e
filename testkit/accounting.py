"""Checks that a run lost nothing: every input record once in the manifest, and once in
`transcripts/` or `quarantine.jsonl`, every quarantined record with a reason naming its line.

A record is a non-blank line. A conversation read from one line is one manifest row;
a file read as one conversation (a message per line, a Claude Code or pi log) is one
row whose `stats.records` says how many lines it was read from.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from hermes_pipeline.inputs.jsonl import BOM

OK = ("compacted", "unchanged")
BAD = ("quarantined", "failed")


def record_lines(path: Path) -> list[int]:
    """Line numbers of the non-blank lines of a file (a UTF-8 BOM alone is blank)."""
    found = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if line.removeprefix(BOM).strip():
                found.append(number)
    return found


def read_rows(path: Path) -> list[dict]:
    with open(path, "rb") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def split_source(source: str) -> tuple[str, int]:
    path, line = source.rsplit(":", 1)
    return path, int(line)


def check_accounting(run_dir: Path, inputs: list[Path], outputs: dict[Path, Path] | None = None) -> list[str]:
    """Everything wrong with the run's bookkeeping (empty when nothing was lost).

    `outputs` maps an input file to its file under transcripts/ (default: same name).
    """
    found: list[str] = []
    rows = read_rows(run_dir / "manifest.jsonl")
    quarantined = read_rows(run_dir / "quarantine.jsonl")
    by_file: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_file[split_source(row["source"])[0]].append(row)
    sources = [r["source"] for r in rows]
    if len(sources) != len(set(sources)):
        found.append("a source appears twice in the manifest")
    bad_sources = sorted(r["source"] for r in rows if r["status"] in BAD)
    if sorted(q["source"] for q in quarantined) != bad_sources:
        found.append("quarantine.jsonl and the manifest's quarantined/failed rows differ")
    for q in quarantined:
        if not (isinstance(q.get("reason"), str) and q["reason"].startswith(q["source"] + ": ")
                and len(q["reason"]) > len(q["source"]) + 4):
            found.append(f"quarantined {q['source']} has no reason naming its file and line")
        if "raw" not in q:
            found.append(f"quarantined {q['source']} keeps no raw record")
    for row in rows:
        if row["status"] in BAD and not (row["error"] or "").startswith(row["source"] + ": "):
            found.append(f"manifest row {row['source']} has no reason naming its file and line")
    for path in inputs:
        lines = record_lines(path)
        file_rows = by_file.pop(str(path), [])
        if not lines:
            if [r["source"] for r in file_rows] != [f"{path}:0"] or file_rows[0]["status"] != "quarantined":
                found.append(f"{path}: an empty file is not one quarantined row")
            continue
        covered = sum(r["stats"].get("records", 1) if isinstance(r.get("stats"), dict) else 1 for r in file_rows)
        if covered != len(lines):
            found.append(f"{path}: {len(lines)} records in, {covered} accounted for in the manifest")
        if not {split_source(r["source"])[1] for r in file_rows} <= set(lines):
            found.append(f"{path}: a manifest row names a line that is not a record")
        written = [r for r in file_rows if r["status"] in OK]
        out = (outputs or {}).get(path) or run_dir / "transcripts" / path.name
        out_lines = len(record_lines(out)) if out.exists() else 0
        one_per_line = all("records" not in (r.get("stats") or {}) for r in written)
        if one_per_line and out_lines != len(written):
            found.append(f"{path}: {len(written)} conversations written, {out_lines} lines in {out}")
        if written and not out_lines:
            found.append(f"{path}: conversations written but {out} is missing or empty")
    if by_file:
        found.append(f"manifest rows for files that were not inputs: {sorted(by_file)}")
    return found
