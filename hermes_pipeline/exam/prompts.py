"""The exam's three requests: their instructions (questions.md, answers.md, grades.md) and their user turns.

A conversation goes to the model rendered as the summary prompt renders it (labelled turns, long tool
output capped at its start and end), so that the exam reads what a summary request reads.
"""
from __future__ import annotations

from pathlib import Path
from string import Template

from hermes_pipeline.summarizers.llm.prompt import defuse, render_turns

_HERE = Path(__file__).parent
QUESTIONS = _HERE.joinpath("questions.md").read_text(encoding="utf-8")
ANSWERS = _HERE.joinpath("answers.md").read_text(encoding="utf-8").strip()
GRADES = _HERE.joinpath("grades.md").read_text(encoding="utf-8").strip()
# what of a conversation the model reads, in characters: the removed span the most (the questions are
# mostly about it), the turns kept around it less (long tool output of both capped at its start and end, as
# a summary request has it); a context answered from is read as the agent would read it, every message
# whole, up to CONTEXT_CHARS in all (more: its oldest and newest parts, the cut said)
REMOVED_CHARS, KEPT_CHARS, CONTEXT_CHARS = 240_000, 40_000, 200_000


def questions_instructions(count: int) -> str:
    return Template(QUESTIONS).substitute(count=count).strip()


def questions_prompt(messages: list[dict], span: tuple[int, int] | None) -> str:
    """The conversation as read, the span the summary replaced marked REMOVED (all of it, without a span)."""
    start, end = span if span else (0, len(messages))
    parts = []
    if start:
        parts.append(f"<kept-before>\n{render_turns(messages[:start], KEPT_CHARS)}\n</kept-before>")
    parts.append(f"<removed>\n{render_turns(messages[start:end], REMOVED_CHARS)}\n</removed>")
    if end < len(messages):
        parts.append(f"<kept-after>\n{render_turns(messages[end:], KEPT_CHARS)}\n</kept-after>")
    return "The conversation (REMOVED: the turns the summary replaces):\n\n" + "\n\n".join(parts)


def _numbered(items: list[str]) -> str:
    return "\n".join(f"{n}. {defuse(item)}" for n, item in enumerate(items, 1))


def answers_prompt(context: list[dict], questions: list[str]) -> str:
    """What whoever resumes sees, and the questions: never the conversation as read, never the references."""
    return (f"<context>\n{render_turns(context, CONTEXT_CHARS, capped=False)}\n</context>\n\n"
            f"<questions>\n{_numbered(questions)}\n</questions>")


def grades_prompt(questions: list[str], references: list[str], answers: list[str]) -> str:
    """Each question with its reference and the answer given; not which context it was answered from."""
    blocks = [f"{n}. Question: {defuse(q)}\n   Reference: {defuse(r)}\n   Answer: {defuse(a)}"
              for n, (q, r, a) in enumerate(zip(questions, references, answers), 1)]
    return "<exam>\n" + "\n\n".join(blocks) + "\n</exam>"
