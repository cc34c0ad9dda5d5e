"""Our summaries against the agents' own: real compaction events, the log cut where the agent compacted.

For every compaction event in the given logs (Claude Code `isCompactSummary`
lines, pi `compaction` entries), the log is cut just before that line and
compacted at the context the agent had: Claude Code's `compact_boundary`
`preTokens` when the log has one, else the last usage recorded before the cut
(prompt + cache + reply, hermes_pipeline.usage.context_tokens); pi's
`tokensBefore`. Then, per event and pooled:
- terms: the share of the agent summary's salient terms (benchmarks.reference_terms)
  found in our summary, anywhere in our compacted conversation (head + summary +
  tail), and anywhere in the input (the ceiling);
- chatter: the share of our summary's bullets that are talk, not state;
- whether our In Progress / Next Steps are empty;
- the summary tokens of both (cl100k).

    .venv/bin/python -m benchmarks.bench_reference [LOG_OR_DIR ...] [--json out.json] [--show-missed]
        [--show-summary]

Without arguments it reads the shared long sessions (../shared/long-sessions).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.reference_terms import chatter_share, salient_terms, section_empty
from hermes_pipeline.analysis.score import conversation_text
from hermes_pipeline.tokens import TokenCounter
from testkit.env import LONG_SESSIONS
from testkit.sessions import make_engine, read_conversations


@dataclass
class Event:
    path: Path
    line: int                  # 1-based line of the agent's summary
    kind: str                  # "claude-code" or "pi"
    summary: str               # what the agent wrote
    context: int | None = None  # recorded context tokens at the cut (None: read from the cut log)


@dataclass
class Outcome:
    event: Event
    context: int
    terms: dict[str, str] = field(default_factory=dict)
    in_summary: list[str] = field(default_factory=list)
    in_conversation: list[str] = field(default_factory=list)
    in_input: list[str] = field(default_factory=list)
    chatter: tuple[int, int] = (0, 0)
    in_progress_empty: bool = True
    next_steps_empty: bool = True
    our_tokens: int = 0
    agent_tokens: int = 0
    budget: int = 0
    compacted: bool = False
    our_summary: str = ""


def find_events(path: Path) -> list[Event]:
    """The compaction events of one log, in file order."""
    events = []
    pre_tokens = None
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if not isinstance(value, dict):
            continue
        if value.get("type") == "system" and value.get("subtype") == "compact_boundary":
            pre_tokens = (value.get("compactMetadata") or {}).get("preTokens")
            continue
        if value.get("isCompactSummary") is True:
            content = (value.get("message") or {}).get("content")
            text = content if isinstance(content, str) else "\n".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict))
            events.append(Event(path, number, "claude-code", text, pre_tokens if isinstance(pre_tokens, int) else None))
        elif value.get("type") == "compaction" and isinstance(value.get("summary"), str):
            before = value.get("tokensBefore")
            events.append(Event(path, number, "pi", value["summary"], before if isinstance(before, int) else None))
        if value.get("type") in ("user", "assistant") and not value.get("isCompactSummary"):
            pre_tokens = None       # a boundary counts only for the summary right after it
    return events


def run_event(event: Event, counter: TokenCounter) -> Outcome:
    lines = event.path.read_bytes().split(b"\n")[:event.line - 1]
    with tempfile.TemporaryDirectory() as folder:
        cut = Path(folder) / event.path.name
        cut.write_bytes(b"\n".join(lines) + b"\n")
        conversations = read_conversations(cut)
    conversation = max(conversations, key=lambda c: len(c.messages))
    context = event.context or conversation.recorded_prompt_tokens
    engine = make_engine(context)
    compaction = engine.compress(conversation)
    terms = salient_terms(event.summary)
    summary = compaction.outcome.summary.text if compaction.outcome.compacted and compaction.outcome.summary else ""
    compacted_text = conversation_text(compaction.messages)
    input_text = conversation_text(conversation.messages)
    out = Outcome(event, context, terms, compacted=compaction.outcome.compacted, our_summary=summary)
    out.in_summary = [t for t in terms if t in summary]
    out.in_conversation = [t for t in terms if t in compacted_text]
    out.in_input = [t for t in terms if t in input_text]
    out.chatter = chatter_share(summary)
    out.in_progress_empty = section_empty(summary, "### In Progress")
    out.next_steps_empty = section_empty(summary, "## Next Steps")
    out.our_tokens = compaction.outcome.summary_tokens
    out.agent_tokens = counter.count_text(event.summary)
    out.budget = engine.services.budgets.max_summary_tokens
    return out


def share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "–"


def table(outcomes: list[Outcome]) -> list[str]:
    rows = ["| event | context | terms | in our summary | in our conversation | in the input | chatter "
            "| In Progress empty | Next Steps empty | tokens: ours / agent's (budget) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        n = len(o.terms)
        rows.append(
            f"| {o.event.path.name[:8]}:{o.event.line} | {o.context:,} | {n} | {share(len(o.in_summary), n)} "
            f"| {share(len(o.in_conversation), n)} | {share(len(o.in_input), n)} "
            f"| {share(*o.chatter)} ({o.chatter[0]}/{o.chatter[1]}) | {'yes' if o.in_progress_empty else 'no'} "
            f"| {'yes' if o.next_steps_empty else 'no'} | {o.our_tokens:,} / {o.agent_tokens:,} ({o.budget:,}) |")
    n = sum(len(o.terms) for o in outcomes)
    chatter = (sum(o.chatter[0] for o in outcomes), sum(o.chatter[1] for o in outcomes))
    both_empty = sum(o.in_progress_empty and o.next_steps_empty for o in outcomes)
    rows.append(
        f"| pooled ({len(outcomes)}) | | {n} | {share(sum(len(o.in_summary) for o in outcomes), n)} "
        f"| {share(sum(len(o.in_conversation) for o in outcomes), n)} "
        f"| {share(sum(len(o.in_input) for o in outcomes), n)} | {share(*chatter)} ({chatter[0]}/{chatter[1]}) "
        f"| {sum(o.in_progress_empty for o in outcomes)} | {sum(o.next_steps_empty for o in outcomes)} "
        f"| both empty: {both_empty}; ours shorter in {sum(o.our_tokens < o.agent_tokens for o in outcomes)} |")
    return rows


def logs(arguments: list[str]) -> list[Path]:
    roots = [Path(a) for a in arguments] or [LONG_SESSIONS]
    return sorted(p for root in roots for p in ([root] if root.is_file() else root.rglob("*.jsonl")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*", help="log files or folders (default: the shared long sessions)")
    parser.add_argument("--json", type=Path, help="write the per-event figures here")
    parser.add_argument("--show-missed", action="store_true", help="list the terms our summary left out")
    parser.add_argument("--show-summary", action="store_true", help="print our summary of each event")
    args = parser.parse_args(argv)
    events = [e for path in logs(args.logs) for e in find_events(path)]
    if not events:
        print(f"no compaction events in {args.logs or LONG_SESSIONS}", file=sys.stderr)
        return 1
    counter = TokenCounter()
    outcomes = [run_event(e, counter) for e in events]
    for o in outcomes:
        if args.show_summary:
            print(f"\n===== {o.event.path.name}:{o.event.line} =====\n{o.our_summary}\n")
        if args.show_missed:
            missed = [t for t in o.terms if t not in o.in_summary]
            print(f"{o.event.path.name[:8]}:{o.event.line} not in our summary ({len(missed)}): "
                  + ", ".join(f"{t} [{o.terms[t]}{'' if t in o.in_input else ', not in input'}]" for t in missed))
    print("\n".join(table(outcomes)))
    if args.json:
        args.json.write_text(json.dumps([{
            "event": f"{o.event.path}:{o.event.line}", "context": o.context, "terms": len(o.terms),
            "in_summary": len(o.in_summary), "in_conversation": len(o.in_conversation), "in_input": len(o.in_input),
            "chatter": list(o.chatter), "in_progress_empty": o.in_progress_empty,
            "next_steps_empty": o.next_steps_empty, "our_tokens": o.our_tokens, "agent_tokens": o.agent_tokens,
            "budget": o.budget, "compacted": o.compacted} for o in outcomes], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
