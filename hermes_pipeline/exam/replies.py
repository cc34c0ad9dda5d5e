"""The exam's replies read: questions, answers and grades, each in the shape its request asks for.

A model may wrap its JSON in a code fence or a sentence: the first JSON object of the reply is read. A
reply in another shape (no list, a kind not asked for, a grade outside 0-5, fewer items than asked) is an
ExamReplyError saying why; as a request's reader it makes the call a failed attempt (retried, then the
exam row says why).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

KINDS = ("recall", "artifact", "continuation", "decision")
NOT_IN_CONTEXT = "not in context"


class ExamReplyError(ValueError):
    """A reply not in the shape its request asked for."""


@dataclass(frozen=True)
class Question:
    kind: str
    question: str
    answer: str          # the reference, from the conversation as read

    def to_dict(self) -> dict:
        return {"kind": self.kind, "question": self.question, "answer": self.answer}


@dataclass(frozen=True)
class Grade:
    grade: int
    note: str = ""


def _object(text: str) -> dict:
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise ExamReplyError("no JSON object in the reply")


def _list(text: str, key: str) -> list:
    value = _object(text).get(key)
    if not isinstance(value, list) or not value:
        raise ExamReplyError(f'the reply has no "{key}" list')
    return value


def read_questions(text: str, count: int) -> list[Question]:
    """`count` questions (a reply with more is cut; one with fewer than half of them is refused)."""
    items = _list(text, "questions")
    questions = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise ExamReplyError(f"question {n} is not an object")
        kind = str(item.get("kind", "")).strip().lower()
        question, answer = item.get("question"), item.get("answer")
        if kind not in KINDS:
            raise ExamReplyError(f"question {n} has kind {kind!r}, not one of {', '.join(KINDS)}")
        if not isinstance(question, str) or not question.strip() or not isinstance(answer, (str, int, float)):
            raise ExamReplyError(f"question {n} needs a question and an answer")
        questions.append(Question(kind, question.strip(), str(answer).strip()))
    if len(questions) < max(1, (count + 1) // 2):
        raise ExamReplyError(f"{len(questions)} question(s), {count} asked for")
    return questions[:count]


def read_answers(text: str, count: int) -> list[str]:
    items = _list(text, "answers")
    if len(items) != count:
        raise ExamReplyError(f"{len(items)} answer(s) to {count} question(s)")
    return [str(item).strip() if item is not None else "" for item in items]


def read_grades(text: str, count: int) -> list[Grade]:
    items = _list(text, "grades")
    if len(items) != count:
        raise ExamReplyError(f"{len(items)} grade(s) for {count} answer(s)")
    grades = []
    for n, item in enumerate(items, 1):
        value = item.get("grade") if isinstance(item, dict) else item
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 5 \
                or value != int(value):
            raise ExamReplyError(f"grade {n} is {value!r}, not a whole number from 0 to 5")
        grades.append(Grade(int(value), str(item.get("note", "")).strip() if isinstance(item, dict) else ""))
    return grades


def checked(read, count: int):
    """A request's reader for the calls: the reply as it is when `read` accepts it, else "" (a failed
    attempt)."""
    def reader(text: str) -> str:
        try:
            read(text, count)
        except ExamReplyError:
            return ""
        return text
    return reader


def why_not(read, text: str, count: int) -> str | None:
    try:
        read(text, count)
    except ExamReplyError as error:
        return str(error)
    return None
