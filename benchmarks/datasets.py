"""Generated bench inputs, cached in bench-data/ (a recipe change rebuilds them)."""
from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks.measure import DATA, cached, link_or_copy
from testkit.env import CORPUS, LONG_SESSIONS

LONG_SEEDS = range(1000, 1040)          # the long-session benchmark: 40 sessions of ~130K tokens
ARCHIVE_SEEDS = range(2000, 2200)       # the nightly archive: 200 more, 5 to a file
PER_FILE = 5
APPENDED_SEED = 9000                    # the conversation a nightly rerun finds appended


def long_sessions() -> Path:
    from testkit.synth import write_sessions
    return cached(DATA / "long-40.jsonl", lambda p: write_sessions(p, LONG_SEEDS),
                  f"write_sessions(range({LONG_SEEDS.start}, {LONG_SEEDS.stop}))")


def twice(source: Path, name: str) -> Path:
    """The same input twice over: twice the bytes, the same largest conversation."""
    def build(path: Path) -> None:
        if source.is_file():
            path.write_bytes(source.read_bytes() * 2)
        else:
            for copy in ("a", "b"):
                for file in sorted(source.rglob("*.jsonl")):
                    link_or_copy(file, path / copy / file.relative_to(source))
    return cached(DATA / name, build, f"twice {source} ({source.stat().st_mtime_ns})")


def shared_files() -> list[tuple[Path, Path]]:
    """(file, where it goes in the archive) for every real transcript beside the repository."""
    found = []
    for root, name in ((CORPUS, "corpus"), (LONG_SESSIONS, "long-sessions")):
        found += [(p, Path("shared") / name / p.relative_to(root)) for p in sorted(root.rglob("*.jsonl"))]
    return found


def archive() -> Path:
    """A nightly archive of >= 100 MB over ~56 files: synthetic sessions 5 to a file, plus copies of
    every shared corpus and long-session file (their own formats: per-line and whole-file logs)."""
    from testkit.synth import write_sessions

    def build(path: Path) -> None:
        (path / "synth").mkdir(parents=True)
        for start in range(ARCHIVE_SEEDS.start, ARCHIVE_SEEDS.stop, PER_FILE):
            part = (start - ARCHIVE_SEEDS.start) // PER_FILE
            write_sessions(path / "synth" / f"part-{part:02d}.jsonl", range(start, start + PER_FILE))
        for source, relative in shared_files():
            (path / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / relative)
    recipe = (f"make_session({ARCHIVE_SEEDS.start}..{ARCHIVE_SEEDS.stop}) x{PER_FILE} per file + "
              + ", ".join(str(r) for _, r in shared_files()))
    return cached(DATA / "archive", build, recipe)


def appended_line() -> bytes:
    """One more conversation (a JSONL line) for a file of the archive."""
    from testkit.synth import write_sessions
    path = cached(DATA / "appended-line.jsonl", lambda p: write_sessions(p, [APPENDED_SEED]),
                  f"write_sessions([{APPENDED_SEED}])")
    return path.read_bytes()
