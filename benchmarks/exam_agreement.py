"""Does the built-in score agree with the judge? Spearman's rank correlation over a judged benchmark's
events x conditions (benchmarks/bench_exam.py), between each context's judged score and the built-in
`quality.score` of the same context (analysis/recall.py), computed here with the code as it is now, of the
context as the answering request showed it (a context longer than the exam's CONTEXT_CHARS is shown by
its oldest and newest parts: what the judge's answers could use); and every context the judge gave 2.5
of 5 or less that the score puts at 0.9 or more.

    .venv/bin/python -m benchmarks.exam_agreement WORK [--conditions default,head_tail,...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.bench_exam import Event, cut_conversation, find_events
from hermes_pipeline.analysis.recall import recall, removed_messages
from hermes_pipeline.exam.prompts import CONTEXT_CHARS
from hermes_pipeline.summarizers.llm.prompt import render_message, render_turns

# the conditions: every kind of compaction a sweep compares
CONDITIONS = ("default", "embedded_summary", "head_tail", "fit_tight", "mask_only")


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = ranks(a), ranks(b)
    mean_a, mean_b = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - mean_a) * (y - mean_b) for x, y in zip(ra, rb))
    var = (sum((x - mean_a) ** 2 for x in ra) * sum((y - mean_b) ** 2 for y in rb)) ** 0.5
    return cov / var if var else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    args = parser.parse_args(argv)
    wanted = args.conditions.split(",")
    rows = [r for r in json.loads((args.work / "judged.json").read_text())
            if r["judged"] is not None and r["condition"] in wanted]
    fixed = json.loads((args.work / "events.json").read_text())
    originals = {}
    for eid, e in fixed.items():
        event = next((x for x in find_events(Path(e["file"])) if x.line == e["line"]),
                     Event(Path(e["file"]), e["line"], e.get("kind", "cut"), "", e.get("context")))   # a held-out cut
        originals[eid] = cut_conversation(event).messages
    judged, scored = [], []
    print("| event | condition | judged (0-5) | quality.score |\n|---|---|---|---|")
    for r in rows:
        context = json.loads((args.work / "contexts" / f"{r['event']}.{r['condition']}.json").read_text())
        original = originals[r["event"]]
        shown_text = render_turns(context, CONTEXT_CHARS, capped=False)
        shown = [m for m in context if render_message(m, capped=False) in shown_text]   # what the answers saw
        score = recall(original, shown, removed_messages(original, shown))["score"]
        score = 1.0 if score is None else score      # nothing the score counts was removed
        judged.append(r["judged"])
        scored.append(score)
        print(f"| {r['event']} | {r['condition']} | {r['judged']:.2f} | {score:.3f} |")
    fooled = [(r["event"], r["condition"], j, s) for r, j, s in zip(rows, judged, scored) if j <= 2.5 and s >= 0.9]
    print(f"\nSpearman (judged, quality.score) over {len(rows)} event x condition pairs: {spearman(judged, scored):.3f}")
    print(f"judged <= 2.5 but quality.score >= 0.9: {len(fooled)}" + "".join(f"\n  {f}" for f in fooled))
    return 0


if __name__ == "__main__":
    sys.exit(main())
