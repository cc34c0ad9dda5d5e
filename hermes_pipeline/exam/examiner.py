"""Exams of many conversations, stage by stage: all questions, then all answers, then all grades.

Each stage's requests go out together, within the model's requests in flight; in batch mode (or with
`summarizer.batch.export_to`) each stage's requests are first written down and sent as batches (or to the
file), as the summaries' are. A conversation whose exam fails (a reply never in the asked shape, an
endpoint that is down) keeps its error and leaves the others alone; a compaction is never changed by it.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from typing import Callable

from hermes_pipeline.exam import prompts
from hermes_pipeline.exam.contexts import context
from hermes_pipeline.exam.replies import KINDS, Grade, Question, checked, read_answers, read_grades, read_questions
from hermes_pipeline.summarizers.llm.batch import BatchRun
from hermes_pipeline.summarizers.llm.calls import Tally
from hermes_pipeline.summarizers.llm.errors import Gathered

log = logging.getLogger(__name__)
REPLY_TOKENS = 4096      # the most any exam reply needs (a dozen questions with their answers)


@dataclass
class Case:
    """One conversation to examine: as read, as compaction wrote it, and the span the summary replaced."""
    id: str
    source: str
    original: list[dict]
    compacted: list[dict]
    span: tuple[int, int] | None = None
    contexts: dict[str, list[dict]] | None = None     # contexts of other names to answer from (a benchmark's)


@dataclass
class Result:
    case: Case
    questions: list[Question] = field(default_factory=list)
    answers: dict[str, list[str]] = field(default_factory=dict)     # condition -> one answer a question
    grades: dict[str, list[Grade]] = field(default_factory=dict)
    error: str | None = None
    tally: Tally = field(default_factory=Tally)

    def score(self, condition: str = "compacted") -> float | None:
        grades = self.grades.get(condition)
        return round(sum(g.grade for g in grades) / len(grades), 3) if grades else None

    def per_kind(self, condition: str = "compacted") -> dict[str, float]:
        grades = self.grades.get(condition) or []
        by_kind: dict[str, list[int]] = {}
        for question, grade in zip(self.questions, grades):
            by_kind.setdefault(question.kind, []).append(grade.grade)
        return {kind: round(sum(v) / len(v), 3) for kind in KINDS if (v := by_kind.get(kind))}

    def to_row(self) -> dict:
        """The manifest row's `exam`: the score of the compacted conversation (0-5), per kind, the questions
        with their references, the answers and grades of every condition; `error` when it failed."""
        row = {"score": self.score(), "per_kind": self.per_kind(),
               "questions": [q.to_dict() for q in self.questions],
               "answers": self.answers,
               "grades": {c: [{"grade": g.grade, "note": g.note} for g in grades] for c, grades in self.grades.items()},
               "baselines": {c: {"score": self.score(c), "per_kind": self.per_kind(c)}
                             for c in self.grades if c != "compacted"},
               "calls": self.tally.calls, "usage": dict(self.tally.usage)}
        if self.error:
            row["error"] = self.error
        return row


class Examiner:
    def __init__(self, calls, questions: int, conditions: tuple[str, ...] = ("compacted",),
                 ledger=None, stop: threading.Event | None = None, before_poll: Callable[[], None] = lambda: None):
        """`calls`: the LLM summarizer's requests (summarizers/llm/calls.py); `conditions`: the contexts the
        questions are answered from (exam/contexts.py); `ledger`: where batches are written down."""
        self.calls, self.count, self.conditions = calls, int(questions), tuple(conditions)
        self.ledger, self.stop, self.before_poll = ledger, stop or threading.Event(), before_poll
        self.tokens = min(REPLY_TOKENS, int(calls.max_output_tokens))

    def run(self, cases: list[Case]) -> list[Result]:
        results = [Result(case, tally=Tally(conversation=case.id)) for case in cases]
        for name, step in (("questions", self._ask), ("answers", self._answer), ("grades", self._grade)):
            self._stage(name, step, [r for r in results if r.error is None])
        return results

    def _stage(self, name: str, step, results: list[Result]) -> None:
        if not results:
            return
        if self.calls.batch_enabled or self.calls.export_to:    # written down first, sent as batches or a file
            def gather() -> dict[str, dict]:
                self.calls.start_gathering()
                try:
                    self.calls.run_all([step(r) for r in results])
                finally:
                    gathered = self.calls.stop_gathering()
                return gathered
            BatchRun(self.calls, self.ledger, self.stop, self.before_poll).run(gather)
        for result, outcome in zip(results, self.calls.run_all([step(r) for r in results])):
            if isinstance(outcome, Gathered):
                continue
            if isinstance(outcome, BaseException):
                result.error = f"{name}: {self.calls._describe(outcome)}"
                log.warning("exam of %s (%s): %s", result.case.id, result.case.source, result.error)

    async def _complete(self, result: Result, system: str, user: str, reader) -> str:
        text, _ = await self.calls.complete(system, user, self.tokens, result.tally, reader)
        return text

    async def _ask(self, result: Result) -> None:
        case = result.case
        text = await self._complete(result, prompts.questions_instructions(self.count),
                                    prompts.questions_prompt(case.original, case.span),
                                    checked(read_questions, self.count))
        result.questions = read_questions(text, self.count)

    async def _answer(self, result: Result) -> None:
        asked = [q.question for q in result.questions]

        async def one(condition: str) -> None:     # each context its own request: one never sees another
            case = result.case
            given = case.contexts[condition] if case.contexts and condition in case.contexts \
                else context(condition, case.original, case.compacted)
            text = await self._complete(result, prompts.ANSWERS, prompts.answers_prompt(given, asked),
                                        checked(read_answers, len(asked)))
            result.answers[condition] = read_answers(text, len(asked))
        await _each(one, self.conditions)

    async def _grade(self, result: Result) -> None:
        asked = [q.question for q in result.questions]
        references = [q.answer for q in result.questions]

        async def one(condition: str) -> None:
            text = await self._complete(result, prompts.GRADES,
                                        prompts.grades_prompt(asked, references, result.answers[condition]),
                                        checked(read_grades, len(asked)))
            result.grades[condition] = read_grades(text, len(asked))
        await _each(one, self.conditions)


async def _each(one, conditions) -> None:
    """`one(condition)` for every condition at once (so that a batch's first pass writes all of them down);
    then the first failure, a request written down before any other."""
    outcomes = await asyncio.gather(*(one(c) for c in conditions), return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    gathered = [o for o in failures if isinstance(o, Gathered)]
    if gathered or failures:
        raise (gathered or failures)[0]
