"""Artifact-trail retention of the embedded summarizer on the real sessions.

Runs the engine in-process on every file of the long sessions and of the
corpus (format detected per file, as a batch run does), and for every
compacted conversation computes the quality probes of the middle it removed
and how many the compacted conversation still carries (hermes_pipeline.analysis).
Prints kept/total per probe kind per file and overall, and the summaries that
went over their token budget.

    .venv/bin/python -m benchmarks.bench_quality [--context 16000] [--json out.json] [--own-summaries]
        [--summarizer FILE.py] [--show-missed]

--own-summaries also scores the Claude Code logs' own compaction summaries
(`isCompactSummary`) against the part of the log they replaced.
--summarizer runs another version of the embedded summarizer (a file defining
ExtractiveSummarizer), e.g. the one before this change:
    git show 3f9ae36:hermes_pipeline/summarizers/embedded/summarizer.py > /tmp/extractive_before.py
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

from hermes_pipeline.analysis.probes import extract_probes
from hermes_pipeline.analysis.score import KINDS, score
from hermes_pipeline.engine import ContextCompressor
from hermes_pipeline.inputs.jsonl import Record, read_records
from testkit.env import CORPUS, LONG_SESSIONS
from testkit.sessions import make_engine, measure, read_conversations

SHOWN = KINDS


def shared_files() -> list[Path]:
    return sorted(LONG_SESSIONS.rglob("*.jsonl")) + sorted(CORPUS.rglob("*.jsonl"))


def add(totals: dict, result: dict) -> None:
    for kind in SHOWN:
        entry = totals.setdefault(kind, {"kept": 0, "total": 0})
        entry["kept"] += result[kind]["kept"]
        entry["total"] += result[kind]["total"]


def ratio(entry: dict) -> str:
    return f"{entry['kept']}/{entry['total']}" + (f" ({entry['kept'] / entry['total']:.0%})" if entry["total"] else "")


def own_summaries(path: Path) -> dict | None:
    """Claude Code's own compaction of this log, scored like ours: the part before its summary is the middle."""
    from hermes_pipeline.formats.anthropic import message_to_openai
    from hermes_pipeline.formats.claude_code import reader as claude_code
    items = [i for i in read_records(str(path), 64 << 20) if isinstance(i, Record)]
    events = [i for i in items if isinstance(i.value, dict) and not i.value.get("isSidechain")
              and claude_code.event_problem(i.value) is None]
    boundary = max((k for k, e in enumerate(events) if e.value.get("isCompactSummary")), default=None)
    if boundary is None:
        return None
    before = claude_code._chain(events[:boundary], [])
    after = claude_code._chain(events, [])
    to_openai = lambda chain: [m for n, t in enumerate(claude_code._merge(chain)) for m in message_to_openai(t.message(), n)]
    removed, kept = to_openai(before), to_openai(after)
    probes = extract_probes(removed + kept[1:], range(len(removed)))
    return score(probes, kept[:1])    # Claude Code keeps nothing verbatim: its summary is all that is left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*", type=Path, help="logs or folders (default: the shared sessions)")
    parser.add_argument("--context", type=int, default=16000)
    parser.add_argument("--json", type=Path, help="write the per-file figures here")
    parser.add_argument("--own-summaries", action="store_true")
    parser.add_argument("--show-missed", action="store_true")
    parser.add_argument("--summarizer", type=Path, help="a file defining ExtractiveSummarizer to use instead")
    args = parser.parse_args(argv)
    files = sorted(p for root in args.logs for p in ([root] if root.is_file() else root.rglob("*.jsonl"))) \
        if args.logs else shared_files()
    if not files:
        print(f"no shared files under {LONG_SESSIONS} or {CORPUS}", file=sys.stderr)
        return 1
    engine = make_engine(args.context)
    if args.summarizer:
        spec = importlib.util.spec_from_file_location("other_extractive", args.summarizer)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        services = engine.services
        tools = dataclasses.replace(services.tools, summarizer=module.ExtractiveSummarizer())
        engine = ContextCompressor(dataclasses.replace(services, tools=tools))
    overall, rows, over_budget = {}, [], []
    print(f"{'file':44} {'conv':>4} " + " ".join(f"{k:>18}" for k in SHOWN) + f" {'score':>6}")
    for path in files:
        totals, scores, count = {}, [], 0
        for conversation in read_conversations(path):
            result = measure(engine, conversation)
            if result is None:
                continue
            count += 1
            add(totals, result)
            add(overall, result)
            if result["score"] is not None:      # a conversation with nothing to probe has no score
                scores.append(result["score"])
            if result["summary_tokens"] > result["budget"]:
                over_budget.append((path.name, conversation.id, result["summary_tokens"], result["budget"]))
            if args.show_missed and any(result["missed"].values()):
                print(f"  missed in {conversation.id}: {json.dumps(result['missed'], ensure_ascii=False)[:1500]}")
        if not count:
            continue
        mean = sum(scores) / len(scores) if scores else None
        shown = f"{mean:>6.3f}" if mean is not None else f"{'–':>6}"
        print(f"{path.name[:44]:44} {count:>4} " + " ".join(f"{ratio(totals[k]):>18}" for k in SHOWN) + f" {shown}")
        rows.append({"file": str(path), "compacted": count, "mean_score": round(mean, 4) if scores else None,
                     **totals})
    print(f"{'ALL':44} {'':>4} " + " ".join(f"{ratio(overall[k]):>18}" for k in SHOWN))
    print(f"summaries over budget: {len(over_budget)}" + "".join(f"\n  {o}" for o in over_budget[:10]))
    if args.own_summaries:
        print("\nClaude Code's own compaction summaries (isCompactSummary), against the log part they replaced:")
        own = {}
        for path in files:
            result = own_summaries(path) if path.suffix == ".jsonl" else None
            if result:
                add(own, result)
                shown = f"{result['score']:>6.3f}" if result["score"] is not None else f"{'–':>6}"
                print(f"{path.name[:44]:44} " + " ".join(f"{ratio(result[k]):>18}" for k in SHOWN) + f" {shown}")
        if own:
            print(f"{'ALL':44} " + " ".join(f"{ratio(own[k]):>18}" for k in SHOWN))
    if args.json:
        args.json.write_text(json.dumps({"context_length": args.context, "files": rows, "overall": overall,
                                         "over_budget": over_budget}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
