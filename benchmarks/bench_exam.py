"""The judged benchmark: real compaction events, each answered from one context at a time, graded blind.

For every compaction event of the given logs (Claude Code `isCompactSummary` lines, pi `compaction`
entries: benchmarks/bench_reference.py finds them), the log is cut just before the agent's summary and
compacted at the context the agent had. A model writes questions (with reference answers) from the cut
conversation as read, most about the span our compaction replaces; the questions are answered from each
condition's context alone, in requests of their own (so one condition never sees another), and the
answers are graded 0-5 against the references, without the condition named:

| condition | the context answered from |
|---|---|
| default | our default output: head + embedded summary + verbatim tail |
| llm | the same with an LLM summary written from our prompt and digest (summarizer=anthropic) |
| agent | the agent's own summary alone (what Claude Code / pi resume from) |
| head_tail | our default output without its summary |
| embedded_summary | our embedded summary alone |
| fit_tight | compression.mode=fit at a tight budget (compression.target_tokens: a tenth of the context) |
| mask_only | pipeline=mask_only: old tool outputs cleared, no summary |

Every model request is a file any model can answer (the provider's batch input JSONL; the exam's own
requests, hermes_pipeline/exam/): each run of this command does what the answers in WORK/results/*.jsonl
allow and writes what it still needs to WORK/requests/<stage>.jsonl, then stops. Answer those (the
provider's batch API; a person or another session with benchmarks/answer_by_hand.py; the fake model with
`python -m hermes_pipeline.testing.answer_file REQUESTS RESULTS`), put the results in WORK/results/, run
again: first the LLM summaries and the questions, then the answers (one file per condition), then the
grades. Then WORK/table.md and WORK/judged.json (each event x condition: the judged score, per kind,
tokens, the built-in quality.score and the probes' share). The questions, once written, stay: WORK/events.json keeps
the span each event's questions are asked about, so a later run judges a changed summarizer on the same exam. Which
events a run judges is what it is given: the logs (by default the shared long sessions' compaction events) or
`--events CUTS.json` (a held-out set: give it on every run of that folder).

    .venv/bin/python -m benchmarks.bench_exam --work WORK [LOG_OR_DIR ...] [--events CUTS.json]
        [--conditions default,llm,...] [--questions 12] [--set KEY=VALUE ...]

Exit status: 0 the table is written; 3 answers are needed (the files named); 2 a usage error; 1 no events.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.bench_reference import Event, find_events, logs
from hermes_pipeline.exam.contexts import context
from hermes_pipeline.exam.examiner import Case, Examiner, Result
from hermes_pipeline.exam.replies import KINDS
from hermes_pipeline.summarizers.llm.batch_files import write_requests
from hermes_pipeline.summarizers.llm.errors import Gathered
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import Conversation
from testkit.builders import compose_config
from testkit.sessions import read_conversations

CONDITIONS = ("default", "llm", "agent", "head_tail", "embedded_summary", "fit_tight", "mask_only")
MODEL = "claude-sonnet-4-6"      # the request format's model (whoever answers the files is the model)
FIT_SHARE = 0.10                 # fit_tight: the conversation must fit a tenth of the agent's context


@dataclass
class Bench:
    work: Path
    questions: int
    conditions: tuple[str, ...]
    settings: tuple[str, ...] = ()       # config overrides every compaction of the run gets (--set)

    def __post_init__(self):
        for folder in ("requests", "results", "contexts"):
            (self.work / folder).mkdir(parents=True, exist_ok=True)
        for old in (self.work / "requests").glob("*.jsonl"):
            old.unlink()        # answered or not, a run writes again what it still needs
        self.results = sorted((self.work / "results").glob("*.jsonl"))
        self.counter = TokenCounter()

    def engine(self, context_length: int, *overrides: str):
        from hermes_pipeline.components import build
        cfg = compose_config("input.path=samples", f"model.context_length={context_length}", *self.settings,
                             *overrides)
        return build(cfg).engine

    def llm_engine(self, context_length: int):
        return self.engine(context_length, "summarizer=anthropic", f"model={MODEL}", "summarizer.require_api_key=false",
                           f"summarizer.cache.path={self.work / 'cache.sqlite'}",
                           f"summarizer.batch.import_from=[{','.join(map(str, self.results))}]")


def event_id(event: Event) -> str:
    return f"{event.path.stem[:24]}-{event.line}"


def cut_conversation(event: Event) -> Conversation:
    lines = event.path.read_bytes().split(b"\n")[:event.line - 1]
    with tempfile.TemporaryDirectory() as folder:
        cut = Path(folder) / event.path.name
        cut.write_bytes(b"\n".join(lines) + b"\n")
        conversations = read_conversations(cut)
    return max(conversations, key=lambda c: len(c.messages))


def contexts_of(bench: Bench, event: Event, conversation: Conversation, context_length: int, pending: dict):
    """Each condition's context (None while the LLM summary waits for its answer), the span, our summary."""
    out = {}
    default = bench.engine(context_length).compress(conversation)
    span = tuple(default.outcome.extra.get("removed_span") or (0, len(conversation.messages)))
    out["default"] = default.messages
    out["head_tail"] = context("head_tail", conversation.messages, default.messages)
    out["embedded_summary"] = context("summary", conversation.messages, default.messages)
    out["agent"] = [{"role": "user", "content": event.summary}]
    if "fit_tight" in bench.conditions:
        target = max(2000, int(context_length * FIT_SHARE))
        out["fit_tight"] = bench.engine(context_length, "compression.mode=fit",
                                        f"compression.target_tokens={target}").compress(conversation).messages
    if "mask_only" in bench.conditions:
        out["mask_only"] = bench.engine(context_length, "pipeline=mask_only").compress(conversation).messages
    if "llm" in bench.conditions:
        engine = bench.llm_engine(context_length)
        calls = engine.services.tools.summarizer.calls
        calls.check()       # the answers imported
        calls.start_gathering()
        try:
            engine.compress(conversation)
        except Gathered:      # a summary request written down: its answer is not in yet
            pass
        finally:
            gathered = calls.stop_gathering()
        if gathered:
            pending.setdefault("summaries", (calls, {}))[1].update(gathered)
            out["llm"] = None
        else:
            out["llm"] = engine.compress(conversation).messages
    return {c: out[c] for c in bench.conditions}, span


def stage(calls, name: str, step, results: list[Result], pending: dict) -> bool:
    """One exam stage for every result: written down when any answer is missing (False), else done."""
    calls.start_gathering()
    try:
        calls.run_all([step(r) for r in results])
    finally:
        gathered = calls.stop_gathering()
    if gathered:
        pending.setdefault(name, (calls, {}))[1].update(gathered)
        return False
    for result, outcome in zip(results, calls.run_all([step(r) for r in results])):
        if isinstance(outcome, BaseException):
            result.error = f"{name}: {calls._describe(outcome)}"
    return True


def write_pending(bench: Bench, pending: dict) -> list[Path]:
    written = []
    for name, (calls, items) in sorted(pending.items()):
        if name == "grades":      # shuffled, so that no order says which condition an answer came from
            items = dict(sorted(items.items(), key=lambda kv: hashlib.sha256(kv[0].encode()).hexdigest()))
        path = bench.work / "requests" / f"{name}.jsonl"
        write_requests(path, calls, items)
        written.append(path)
    return written


def run(bench: Bench, events: list[Event]) -> int:
    fixed_path = bench.work / "events.json"
    fixed = json.loads(fixed_path.read_text()) if fixed_path.is_file() else {}
    pending: dict = {}
    cases: list[tuple[str, Event, Case, dict, int]] = []
    calls = None
    for event in events:
        eid = event_id(event)
        conversation = cut_conversation(event)
        context_length = event.context or conversation.recorded_prompt_tokens
        contexts, span = contexts_of(bench, event, conversation, context_length, pending)
        span = tuple(fixed.get(eid, {}).get("span") or span)       # the exam asks about the first run's span
        fixed[eid] = {"file": str(event.path), "line": event.line, "kind": event.kind, "context": context_length,
                      "span": list(span)}
        for condition, messages in contexts.items():
            if messages is not None:
                (bench.work / "contexts" / f"{eid}.{condition}.json").write_text(json.dumps(messages))
        cases.append((eid, event, Case(eid, f"{event.path}:{event.line}", conversation.messages, [], span,
                                       contexts), contexts, context_length))
        calls = calls or bench.llm_engine(context_length).services.tools.summarizer.calls
    fixed_path.write_text(json.dumps(fixed, indent=1))
    calls.check()
    examiner = Examiner(calls, bench.questions)
    results = {eid: Result(case) for eid, _, case, _, _ in cases}
    asked = stage(calls, "questions", examiner._ask, list(results.values()), pending)
    ready = asked and "summaries" not in pending
    live = lambda: [r for r in results.values() if r.error is None]
    if ready:       # each condition's answers in requests of their own (its name in none of them)
        for condition in bench.conditions:
            one = Examiner(calls, bench.questions, (condition,))
            ready &= stage(calls, f"answers-{condition}", one._answer, live(), pending)
    if ready:       # every condition's grades in one file, shuffled
        for condition in bench.conditions:
            ready &= stage(calls, "grades", Examiner(calls, bench.questions, (condition,))._grade, live(), pending)
    if pending:
        for path in write_pending(bench, pending):
            print(f"needs answers: {path} ({sum(1 for _ in open(path))} request(s))")
        print(f"answer them (the provider's batch output format) into {bench.work / 'results'}/, then run again")
        return 3
    report(bench, cases, results)
    return 0


def report(bench: Bench, cases, results) -> None:
    from hermes_pipeline.analysis.probes import extract_probes
    from hermes_pipeline.analysis.recall import recall, removed_messages
    from hermes_pipeline.analysis.score import score as probe_score
    rows, lines = [], ["| event | context | " + " | ".join(bench.conditions) + " |",
                       "|---|---|" + "---|" * len(bench.conditions)]
    for eid, event, case, contexts, context_length in cases:
        result = results[eid]
        cells = []
        for condition in bench.conditions:
            grades = result.grades.get(condition) or []
            judged = round(sum(g.grade for g in grades) / len(grades), 3) if grades else None
            kinds = {}
            for question, grade in zip(result.questions, grades):
                kinds.setdefault(question.kind, []).append(grade.grade)
            messages = contexts[condition]
            probes = extract_probes(case.original, range(*case.span), max_errors=8)
            rows.append({"event": eid, "condition": condition, "judged": judged,
                         "per_kind": {k: round(sum(v) / len(v), 3) for k, v in kinds.items()},
                         "tokens": sum(bench.counter.count_messages(messages)),
                         "quality_score": recall(case.original, messages,
                                                 removed_messages(case.original, messages))["score"],
                         "probe_score": probe_score(probes, messages).get("score"),
                         "error": result.error})
            cells.append("–" if judged is None else f"{judged:.2f}")
        lines.append(f"| {eid} | {context_length:,} | " + " | ".join(cells) + " |")
    pooled = []
    for condition in bench.conditions:
        values = [r["judged"] for r in rows if r["condition"] == condition and r["judged"] is not None]
        tokens = [r["tokens"] for r in rows if r["condition"] == condition]
        per_kind = {k: [r["per_kind"][k] for r in rows if r["condition"] == condition and k in r["per_kind"]]
                    for k in KINDS}
        pooled.append((condition, sum(values) / len(values) if values else None, per_kind,
                       sum(tokens) / len(tokens) if tokens else 0))
    lines += ["", "| condition | judged (0-5) | " + " / ".join(KINDS) + " | ~tokens |", "|---|---|---|---|"]
    for condition, mean, per_kind, tokens in pooled:
        kinds = " / ".join(f"{sum(v) / len(v):.2f}" if v else "–" for v in per_kind.values())
        lines.append(f"| {condition} | {'–' if mean is None else f'{mean:.2f}'} | {kinds} | {tokens:,.0f} |")
    lines += ["", f"{len(cases)} events, {bench.questions} questions each, {len(bench.conditions)} conditions; "
              "questions written from the cut log as read, each condition answered in requests of its own, "
              "graded 0-5 blind (`python -m benchmarks.bench_exam`)."]
    (bench.work / "table.md").write_text("\n".join(lines) + "\n")
    (bench.work / "judged.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))


def held_out_events(path: Path) -> list[Event]:
    """The events a JSON list names: {file, line} of a compaction event (with `context`: compacted at that
    context instead of the agent's), or {file, line, context} of any cut (the log read up to the line before
    `line`, compacted at `context`): a log the agent never compacted has no agent summary, so its exam has no
    `agent` condition."""
    events = []
    entries = json.loads(path.read_text())
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "file" in e and "line" in e for e in entries):
        raise SystemExit(f"{path}: not a list of {{file, line[, context]}} (a cuts file; a work folder's events.json "
                         "is what a run writes, not what --events reads)")
    for entry in entries:
        log = Path(entry["file"])       # absolute, or relative to the working folder (the repository's root)
        if not log.is_file():
            raise SystemExit(f"{path}: {log} is not a file (relative paths are read from {Path.cwd()})")
        found = [e for e in find_events(log) if e.line == entry["line"]]
        if found:       # a compaction event; a `context` given judges it at another context than the agent's
            context = entry.get("context") or found[0].context
            events.append(replace(found[0], context=int(context) if context else None))
        elif entry.get("context"):
            events.append(Event(log, int(entry["line"]), "cut", "", int(entry["context"])))
        else:
            raise SystemExit(f"{path}: {log}:{entry['line']} is not a compaction event; give its `context` to cut there")
    return sorted(events, key=lambda e: (str(e.path), e.line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*", help="logs or folders (default: the shared long sessions)")
    parser.add_argument("--work", type=Path, required=True, help="the benchmark's folder: requests, results, table")
    parser.add_argument("--events", type=Path,
                        help="a cuts file, a JSON list of {file, line, context} (line: 1-based, the log is read up to "
                             "the line before it; the number of lines + 1 cuts at the end); give it on every run "
                             "of the folder, as benchmarks/exam_results/held_out/cuts.json")
    parser.add_argument("--conditions", default=",".join(CONDITIONS),
                        help=f"comma-separated, of: {', '.join(CONDITIONS)}")
    parser.add_argument("--questions", type=int, default=12, help="questions per event")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for every compaction judged (repeatable), to judge a setting: "
                             "compression.summary_context_share=0.1; use a work folder of its own per setting")
    args = parser.parse_args(argv)
    conditions = tuple(c for c in args.conditions.split(",") if c)
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        parser.error(f"unknown condition(s) {', '.join(unknown)}; the conditions are {', '.join(CONDITIONS)}")
    if args.events:
        events = held_out_events(args.events)
    else:
        events = [e for path in logs(args.logs) for e in find_events(path)]
    if not events:
        print("no compaction events found", file=sys.stderr)
        return 1
    cuts = [f"{e.path.name}:{e.line}" for e in events if not e.summary]
    if "agent" in conditions and cuts:
        print(f"the `agent` condition needs the agent's own summary, and {', '.join(cuts)} has none (a cut of a log "
              "the agent never compacted): leave `agent` out of --conditions", file=sys.stderr)
        return 2
    return run(Bench(args.work, args.questions, conditions, tuple(args.set)), events)


if __name__ == "__main__":
    sys.exit(main())
