"""Golden outputs: digests of what the default pipeline writes, to catch any unintended change.

`python -m testkit.golden` prints the digests of every case whose input is here;
a deliberate change of the output (a better summary, moved boundaries) updates
tests/data/golden.json with `--update`, and its commit says why.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path

from testkit.env import CORPUS, LONG_SESSIONS, REAL, ROOT, run_cli
from testkit.synth import write_sessions

GOLDEN = ROOT / "tests" / "data" / "golden.json"
SMALL = ("model.context_length=4000", "compression.protect_last_n=4")
CASES = {   # name: (input, overrides)
    "real-4000": (REAL, SMALL),
    "real-16000": (REAL, ("model.context_length=16000",)),
    "corpus-4000": (CORPUS, SMALL),
    "corpus-16000": (CORPUS, ("model.context_length=16000",)),
    "long-16000": (LONG_SESSIONS, ("model.context_length=16000",)),
    "long-mask-only": (LONG_SESSIONS, ("model.context_length=16000", "pipeline=mask_only")),
    "synth-default": ("synth", ()),
    "synth-1h-0.3": ("synth", ("prompt_caching.cache_ttl=1h", "compression.threshold=0.3")),
}
SYNTH_SEEDS = (7, 8, 9)


def case_input(name: str, work: Path) -> Path | None:
    source = CASES[name][0]
    if source == "synth":
        path = work / "synth.jsonl"
        if not path.exists():
            write_sessions(path, SYNTH_SEEDS)
        return path
    return source if Path(source).exists() else None


def digests(name: str, work: Path) -> dict[str, str]:
    """sha256 of every file the case's run writes under transcripts/."""
    source = case_input(name, work)
    run_dir = work / name
    result = run_cli(run_dir, f"input={source}", "progress=none", *CASES[name][1])
    if result.returncode not in (0, 2):
        raise RuntimeError(f"{name}: exit {result.returncode}: {result.stderr}")
    root = run_dir / "transcripts"
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.jsonl"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--update", action="store_true", help="write tests/data/golden.json")
    args = parser.parse_args()
    known = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in CASES:
            if case_input(name, Path(tmp)) is None:
                print(f"{name}: input absent, kept as it was")
                continue
            found = digests(name, Path(tmp))
            print(f"{name}: {'same' if known.get(name) == found else 'CHANGED'} ({len(found)} files)")
            known[name] = found
    if args.update:
        GOLDEN.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
