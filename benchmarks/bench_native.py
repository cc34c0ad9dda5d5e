"""Native write-back of agent sessions: what history=keep and history=drop write, and whether the agent resumes it.

Compacts every Claude Code / pi log under each input with the real command line,
once with output.native.history=keep and once with drop, and prints per file the
input size, both output sizes and the compaction's status; totals at the end.
With --resume, every compacted output is resumed in the pinned agent (agents/,
`make agents`) against the fake API of the tests, with the tests' checks: the
request is our summary and kept messages in order, no request refused, smaller
than the original's.

    .venv/bin/python -m benchmarks.bench_native --input ../shared/long-sessions --context 32000 [--resume]
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from testkit.env import read_jsonl, run_cli


def _outputs(folder: Path, context: int | None, history: str, run_dir: Path) -> dict[Path, tuple[dict, Path]]:
    args = [f"input={folder}", f"output.native.history={history}"] + ([f"model.context_length={context}"]
                                                                       if context else [])
    result = run_cli(run_dir, *args, timeout=3600)
    if result.returncode not in (0, 2):
        raise SystemExit(f"hermes-pipeline failed on {folder}: {result.stderr[-2000:]}")
    out = {}
    for row in read_jsonl(run_dir / "manifest.jsonl"):
        if row["status"] in ("compacted", "unchanged") and row["format"] in ("claude-code", "pi"):
            source = Path(row["source"].rsplit(":", 1)[0])
            out[source] = (row, run_dir / "transcripts" / source.relative_to(folder))
    return out


def _resume_check(row: dict, out: Path, work: Path, api, originals: dict) -> str:
    from testkit.agents import resume_claude, resume_pi
    from testkit.resume_checks import claude_code_expected, mismatch, pi_expected, request_blocks
    resume, expected_of = (resume_claude, claude_code_expected) if row["format"] == "claude-code" \
        else (resume_pi, pi_expected)
    source = Path(row["source"].rsplit(":", 1)[0])
    if source not in originals:
        originals[source] = resume(source, api, work / f"original-{len(originals)}")
    resumed = resume(out, api, work / f"resumed-{len(originals)}-{out.stat().st_size}")
    if resumed.returncode != 0:
        return f"agent exit {resumed.returncode}"
    if resumed.refused:
        return f"{len(resumed.refused)} refused: {resumed.refused[0].problem}"
    expected, _ = expected_of(out)
    wrong = mismatch(expected, request_blocks(resumed.conversation, reminders=row["format"] == "claude-code"))
    if wrong:
        return f"mismatch: {wrong[:160]}"
    original = originals[source]
    if original.refused or original.returncode != 0 or len(original.conversation) <= 1:
        why = original.refused[0].problem if original.refused else f"agent exit {original.returncode}" \
            if original.returncode else "the agent loaded nothing of it"
        return f"ok (the original itself does not resume: {why[:80]})"
    return "ok" if resumed.size < original.size else "ok, but not smaller than the original's request"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, action="append", required=True, help="folder of session logs")
    parser.add_argument("--context", type=int, default=None, help="model.context_length (default: the model's)")
    parser.add_argument("--resume", action="store_true", help="resume every compacted output in its agent")
    args = parser.parse_args(argv)
    totals = {"in": 0, "keep": 0, "drop": 0, "compacted": 0, "files": 0, "resumed ok": 0}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        api = None
        if args.resume:
            from hermes_pipeline.testing.fake_agent_api import AgentAPI
            api = AgentAPI().__enter__()
        originals: dict = {}
        print("| file | status | input bytes | keep bytes | drop bytes | resumed |")
        print("|---|---|---|---|---|---|")
        for n, folder in enumerate(args.input):
            keep = _outputs(folder.resolve(), args.context, "keep", work / f"keep-{n}")
            drop = _outputs(folder.resolve(), args.context, "drop", work / f"drop-{n}")
            for source, (row, out) in sorted(keep.items()):
                dropped = drop[source][1]
                verdict = "-"
                if args.resume and row["status"] == "compacted":
                    verdict = "; ".join(_resume_check(r, o, work, api, originals) for r, o in (keep[source], drop[source]))
                    totals["resumed ok"] += all(v.startswith("ok") for v in verdict.split("; "))
                sizes = (source.stat().st_size, out.stat().st_size, dropped.stat().st_size)
                print(f"| {source.name} | {row['status']} | {sizes[0]:,} | {sizes[1]:,} | {sizes[2]:,} | {verdict} |")
                for key, size in zip(("in", "keep", "drop"), sizes):
                    totals[key] += size
                    if row["status"] == "compacted":
                        totals[f"compacted {key}"] = totals.get(f"compacted {key}", 0) + size
                totals["compacted"] += row["status"] == "compacted"
                totals["files"] += 1
        if api is not None:
            api.__exit__(None, None, None)
    print(json.dumps(totals))
    if totals.get("compacted in"):
        print(f"compacted sessions: keep {totals['compacted keep'] / totals['compacted in']:.3f} of their bytes, "
              f"drop {totals['compacted drop'] / totals['compacted in']:.3f}")


if __name__ == "__main__":
    main()
