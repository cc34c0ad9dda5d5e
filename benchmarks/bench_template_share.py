"""How much of each summary section is template text, not what the user or the agent said (issue 31).

A slash command, a saved prompt or a skill puts a long instruction document into the user's turn.
A summary section filled with it says nothing about the work. Template text is found two ways, the
second not depending on the product's own detection (analysis/user_text.py):
- what the product's reading of a user turn leaves out of it (the expanded template, harness notices);
- text of long user turns (a template is a document: LONG_TURN characters or more) that recurs in two
  or more different conversations of the collection (templates recur, a user's own request rarely
  does; short phrases do, "my user ID is ...", and are no template).
A summary line counts as template when at least half its 8-word runs are template runs; a section's
share is its template lines' characters over its characters. Every file of the shared corpus and long
sessions is compacted in process at each context.

    .venv/bin/python -m benchmarks.bench_template_share [--contexts 32000,64000] [--json OUT] [--show]
"""
from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

from hermes_pipeline.analysis.user_text import user_text
from hermes_pipeline.transcript import message_text
from testkit.env import CORPUS, LONG_SESSIONS
from testkit.sessions import make_engine, read_conversations

RUN = 8              # words in a run
LIMIT = 0.5          # the issue's bound on a section's template share
LONG_TURN = 800
_WORD = re.compile(r"\w+")


def runs(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}


def files() -> list[Path]:
    found = []
    for root in (CORPUS, LONG_SESSIONS):
        if root.is_dir():
            found += sorted(p for p in root.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())
    return found


def template_runs(conversations) -> set[tuple[str, ...]]:
    """Runs of the product's left-out user text, and runs that recur in long user turns of two conversations."""
    left_out: set = set()
    seen_in: dict = defaultdict(set)
    for key, conversation in conversations:
        for message in conversation.messages:
            if message.get("role") != "user":
                continue
            text = message_text(message)
            raw = runs(text)
            left_out |= raw - runs(user_text(message))
            if len(text) >= LONG_TURN:
                for run in raw:
                    seen_in[run].add(key)
    return left_out | {run for run, keys in seen_in.items() if len(keys) > 1}


def sections(summary: str) -> dict[str, str]:
    found, name = {}, "(before any heading)"
    for line in summary.splitlines():
        if line.startswith("#"):
            name = line.lstrip("#").strip()
            continue
        found[name] = found.get(name, "") + line + "\n"
    return {k: v for k, v in found.items() if v.strip()}


def template_share(text: str, template: set) -> float:
    total = in_template = 0
    for line in text.splitlines():
        total += len(line)
        line_runs = runs(line)
        if line_runs and len(line_runs & template) * 2 >= len(line_runs):
            in_template += len(line)
    return in_template / total if total else 0.0


def measure_at(context: int, conversations, template: set, show: bool) -> dict:
    engine = make_engine(context)
    shares, worst = [], []
    for key, conversation in conversations:
        outcome = engine.compress(conversation).outcome
        if not (outcome.compacted and outcome.summary):
            continue
        for name, text in sections(outcome.summary.text).items():
            share = template_share(text, template)
            shares.append(share)
            if share > LIMIT:
                worst.append({"conversation": key, "section": name, "share": round(share, 3)})
                if show:
                    print(f"--- {key} / {name} ({share:.0%})\n{text}")
    return {"context": context, "sections": len(shares), "over_half": len(worst),
            "largest_share": round(max(shares, default=0.0), 3),
            "mean_share": round(sum(shares) / len(shares), 4) if shares else 0.0, "over": worst}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", default="32000,64000")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--show", action="store_true", help="print each section over half template text")
    args = parser.parse_args(argv)
    conversations = [(f"{path.name}:{c.id}", c) for path in files() for c in read_conversations(path)]
    template = template_runs(conversations)
    found = [measure_at(int(c), conversations, template, args.show) for c in args.contexts.split(",")]
    print("| context | summary sections | over half template text | largest share | mean share |")
    print("|---|---|---|---|---|")
    for f in found:
        print(f"| {f['context']:,} | {f['sections']} | {f['over_half']} | {f['largest_share']} | {f['mean_share']} |")
        for row in f["over"]:
            print(f"- {row['conversation']}: {row['section']}: {row['share']:.0%}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
