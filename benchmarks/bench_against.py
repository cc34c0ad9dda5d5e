"""This checkout against an earlier commit, on the same input (issue 29: main no slower than 9f44c05).

    .venv/bin/python -m benchmarks.bench_against [--rev 9f44c05]

The earlier commit's files are exported with `git archive` into bench-data/at-<rev>/ (no worktree, nothing
of it committed) and run by this virtualenv's Python from that folder, so `python -m hermes_pipeline`
imports its package, not ours; its dependencies are ours, which an extractive run does not tell apart.
Both command lines run alternately on the synthetic long sessions and the real long sessions, default
config: the figure is this checkout's CPU time over the earlier one's, median of the pairs. Their
transcripts are compared byte for byte: they differ where the summary changed on purpose since, and since the
native formats are written back as they were read.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from benchmarks import datasets
from benchmarks.measure import DATA, ROOT, WORK, Run, cached, cli, figure, fresh, paired
from testkit.env import LONG_SESSIONS

AREA = "regression"
REV = "9f44c05"


def exported(rev: str) -> Path:
    """The commit's tree as files, cached by its full hash."""
    sha = subprocess.run(["git", "rev-parse", rev], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()

    def build(path: Path) -> None:
        path.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", sha], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(path)], input=archive, check=True)
    return cached(DATA / f"at-{rev}", build, f"git archive {sha}")


def cli_in(tree: Path, run_dir: Path, *overrides: str) -> Run:
    """`python -m hermes_pipeline` run from `tree`: the package found first is that tree's."""
    return cli(run_dir, *overrides, cwd=tree)


def same_output(a: Path, b: Path) -> tuple[int, int]:
    """(files with the same bytes, files) of two runs' transcripts."""
    files = sorted(p.relative_to(a / "transcripts") for p in (a / "transcripts").rglob("*") if p.is_file())
    same = sum((b / "transcripts" / f).is_file() and (a / "transcripts" / f).read_bytes()
               == (b / "transcripts" / f).read_bytes() for f in files)
    return same, len(files)


def figures(rev: str = REV) -> tuple[list[dict], dict]:
    work = fresh(WORK / AREA)
    then = exported(rev)
    rows, raw = [], {}
    inputs = [("synthetic 40 x 130K", datasets.long_sessions())]
    if sorted(LONG_SESSIONS.rglob("*.jsonl")):
        inputs.append(("real long sessions", LONG_SESSIONS))
    for label, source in inputs:
        slug = label.split()[0]
        pair = paired(lambda i: cli_in(then, work / f"{slug}-then-{i}", f"input={source}"),
                      lambda i: cli_in(ROOT, work / f"{slug}-now-{i}", f"input={source}"))
        same, files = same_output(pair.a[0].run_dir, pair.b[0].run_dir)
        rows.append(figure(AREA, f"{label}: this checkout / {rev}, CPU", pair.ratio("cpu"), ("<=", 1.0), None, "x",
                           f"{pair.median('b', 'cpu'):.2f} s vs {pair.median('a', 'cpu'):.2f} s CPU (wall "
                           f"x{pair.ratio('wall'):.2f}), median of {len(pair.a)} pairs; transcripts byte-identical "
                           f"in {same} of {files} files (the summary and the native output formats have changed on "
                           "purpose since)"))
        raw[label] = pair.describe()
    return rows, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default=REV)
    args = parser.parse_args()
    rows, _ = figures(args.rev)
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    sys.exit(main())
