"""After the run: the judged exam of a sample of its compacted conversations (exam.enabled=true).

The sample is chosen by a hash of each conversation's id, file name and line, so the same input gives the same
sample in every run and every sweep point. Each examined conversation is read again from its input and
from what the run wrote (run/read_back.py), examined (exam/examiner.py), and its manifest row gains
`exam`; `exam.jsonl` holds the same rows, and summary.json the totals. Reading and examining change no
transcript byte; a conversation whose exam fails says why in its `exam.error`, and the run's exit status
does not change for it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from hermes_pipeline.exam.examiner import Case, Examiner, Result
from hermes_pipeline.exam.plan import ExamPlan
from hermes_pipeline.exam.replies import KINDS
from hermes_pipeline.inputs.jsonl import dumps
from hermes_pipeline.run.batch_pass import ledger_for
from hermes_pipeline.run.fault_injection import fault_point
from hermes_pipeline.run.read_back import NotFound, conversation_after, conversation_before
from hermes_pipeline.run.run_folder import run_log

log = logging.getLogger(__name__)
EXAM_FILE = "exam.jsonl"


@dataclass
class ExamTotals:
    examined: int = 0
    results: list[Result] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)        # conversations not examined, and why

    def to_dict(self, usd) -> dict:
        """summary.json's `exam`: the mean judged score (0-5) of the compacted conversations, per kind, each
        baseline's, how many were examined and failed, and what the exam's requests cost."""
        done = [r for r in self.results if r.error is None]
        mean = lambda values: round(sum(values) / len(values), 3) if values else None
        conditions = sorted({c for r in done for c in r.grades})
        usage: dict[str, int] = {}
        batch: dict[str, int] = {}
        for r in self.results:
            for k, v in r.tally.usage.items():
                usage[k] = usage.get(k, 0) + v
            for k, v in r.tally.batch_usage.items():
                batch[k] = batch.get(k, 0) + v
        return {
            "score": mean([r.score() for r in done if r.score() is not None]),
            "per_kind": {k: mean([r.per_kind()[k] for r in done if k in r.per_kind()]) for k in KINDS
                         if any(k in r.per_kind() for r in done)},
            "baselines": {c: mean([r.score(c) for r in done if r.score(c) is not None])
                          for c in conditions if c != "compacted"},
            "examined": len(done), "errors": len(self.results) - len(done),
            "not_examined": self.skipped[:20],
            "calls": sum(r.tally.calls for r in self.results), "usage": usage,
            "cost_usd": usd(usage, batch),
        }


def sample_of(rows: list[dict], size: int) -> list[dict]:
    """`size` compacted rows (0: all), by the hash of id, file name and line: a stable, spread-out choice that
    does not depend on where the input is or how its path was written."""
    compacted = [r for r in rows if r.get("status") == "compacted"]
    ranked = sorted(compacted, key=lambda r: hashlib.sha256(f"{r['id']}\0{_file_and_line(r['source'])}".encode())
                    .hexdigest())
    chosen = ranked if size == 0 else ranked[:size]
    return sorted(chosen, key=compacted.index)       # examined in input order


def _file_and_line(source: str) -> str:
    """`name.jsonl:12` of a source `any/folder/name.jsonl:12` (a source without a line: the file's name)."""
    path, colon, line = source.rpartition(":")
    return f"{Path(path).name}:{line}" if colon and line.isdigit() else Path(source).name


def run_exam(plan: ExamPlan, calls, run_dir: Path, tree, inputs, stop: threading.Event) -> ExamTotals:
    """The exam of the run in `run_dir` (its manifest written): rows updated, exam.jsonl written. Raises
    RequestsExported when its requests went to a file (summarizer.batch.export_to)."""
    rows = [json.loads(line) for line in _lines(run_dir)]
    outputs = {str(f.path.resolve()): tree.path_for(f.relative) for f in inputs}
    totals, cases = ExamTotals(), []
    for row in sample_of(rows, plan.sample):
        try:
            cases.append(_case(row, plan, outputs))
        except NotFound as error:
            totals.skipped.append(f"{row['source']}: {error}")
    if not cases:
        return totals
    run_log.info("exam: %d conversation(s), %d question(s) each, answered from %s", len(cases), plan.questions,
                 ", ".join(("compacted",) + plan.baselines))
    examiner = Examiner(calls, plan.questions, ("compacted",) + plan.baselines,
                        ledger_for(tree, run_dir), stop, before_poll=lambda: fault_point("batch_poll"))
    totals.results = examiner.run(cases)
    totals.examined = len(totals.results)
    _write(run_dir, totals.results)
    return totals


def _lines(run_dir: Path) -> list[bytes]:
    return [line for line in (run_dir / "manifest.jsonl").read_bytes().splitlines() if line.strip()]


def _case(row: dict, plan: ExamPlan, outputs: dict[str, Path]) -> Case:
    conversation = conversation_before(row["source"], plan.input_format)
    out = outputs.get(str(Path(row["source"].rsplit(":", 1)[0]).resolve()))
    if out is None:
        raise NotFound("its output is not among this run's")
    compacted = conversation_after(conversation, out, plan.output_format, plan.input_format)
    span = tuple(row["removed_span"]) if row.get("removed_span") else None
    return Case(str(row["id"]), row["source"], conversation.messages, compacted, span)


def _write(run_dir: Path, results: list[Result]) -> None:
    """exam.jsonl, and the examined rows of manifest.jsonl with their `exam` (the file replaced whole; the
    other rows as they were, byte for byte)."""
    by_source = {r.case.source: r.to_row() for r in results}
    with open(run_dir / EXAM_FILE, "wb") as handle:
        for result in results:
            handle.write(dumps({"id": result.case.id, "source": result.case.source,
                                **by_source[result.case.source]}) + b"\n")
    part = run_dir / ".manifest.jsonl.part"
    with open(part, "wb") as handle:
        for line in _lines(run_dir):
            row = json.loads(line)
            exam = by_source.get(row.get("source")) if row.get("status") == "compacted" else None
            handle.write((dumps({**row, "exam": exam}) if exam else line) + b"\n")
    os.replace(part, run_dir / "manifest.jsonl")
    for result in results:
        if result.error:
            run_log.warning("exam of %s (%s) failed: %s", result.case.id, result.case.source, result.error)
