"""The user's words in the embedded summary: the task, later requests, rules, answers.

- Goal: the first real request (the head's, else the middle's first), then each
  later request in the user's own words (a long one by its distinctive
  sentences), the newest marked "Latest request". A turn that only
  acknowledges or greets ("ok", "go on") is no request; text a harness put in
  the user's turn (`<system-reminder>`, `<ide_opened_file>`, command wrappers,
  hook feedback) is never quoted as the user.
- Constraints & Preferences: the user's rules, sentence by sentence, verbatim,
  each once ("never push directly to main", "respond in Korean").
- Key Decisions: a short answer to a question the agent asked, beside the question.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from hermes_pipeline.analysis.probes import LONG_TURN_CHARS, substantive_user_text, user_turn_units
from hermes_pipeline.analysis.redact import strip_think
from hermes_pipeline.analysis.speech import asks, is_ack, plain, sentences
from hermes_pipeline.analysis.tool_output import normalize
from hermes_pipeline.summarizers.embedded.sections import KEY, USER_WORDS, Collector
from hermes_pipeline.transcript import is_summary_message, message_text, role, visible_role

ANSWER_CHARS = 80         # a user turn up to this long, right after the agent asked something, is an answer
# a sentence that binds the work: requirement words, a language or style to use
RULE = re.compile(r"\b(?:must|never|always|don'?t|do not|avoid|prefer|should|shall|require[sd]?|only|make sure|ensure|"
                  r"no more than|at least|at most|instead|without)\b|\b(?:respond|reply|answer|write|speak|talk)\b.{0,20}"
                  r"\bin\b|\bplease use\b|^use\b", re.I)
# the user saying what they themselves don't know or have ("I don't remember the ID"), not a rule for the work
_ABOUT_ME = re.compile(r"\bI (?:don'?t|do not|never|can'?t|cannot) (?!want|like|need|care|mind|allow|expect)", re.I)


@dataclass
class UserTurn:
    index: int
    text: str                 # what the user wrote, harness text removed
    asked: str | None         # the agent's question it answers, when it is a short answer to one


def _question_before(messages: list[dict], index: int) -> str | None:
    """The question the agent's last visible words before `index` ended with, if they did."""
    for i in range(index - 1, -1, -1):
        r = visible_role(messages[i])
        if r == "user":
            return None
        if r == "assistant":
            return asks(strip_think(message_text(messages[i])))
    return None


def user_turns(messages: list[dict], start: int, end: int) -> list[UserTurn]:
    out = []
    for i in range(start, end):
        message = messages[i]
        if role(message) != "user" or is_summary_message(message):
            continue
        text = strip_think(substantive_user_text(message)).strip()
        if not text:
            continue
        asked = _question_before(messages, i) if len(text) <= ANSWER_CHARS else None
        if asked is None and is_ack(text):
            continue
        out.append(UserTurn(i, text, asked))
    return out


def quoted(text: str) -> str:
    """A user turn as a summary quotes it: whole when short, else by its distinctive sentences."""
    return normalize(text) if len(text) <= LONG_TURN_CHARS else " … ".join(user_turn_units(text))


def _opening(text: str) -> str:
    """The start of a first request: sentences until there are 40 characters, at most 300."""
    parts = sentences(text)
    opening = 1
    while opening < len(parts) and len(" ".join(parts[:opening])) < 40:
        opening += 1
    words = normalize(" ".join(parts[:opening]))
    return words if len(words) <= 300 else words[:299] + "…"


def add_user_words(head: list[dict], middle_start: int, messages: list[dict], c: Collector,
                   carried_goal: bool) -> tuple[int, str] | None:
    """Goal, rules and answers; returns (position, text) of the latest request of the middle."""
    first = next(iter(user_turns(messages, 0, len(head))), None)
    if first is not None and first.asked is None:
        c.add("## Goal", "- Task: " + _opening(first.text), USER_WORDS, -2)
        rules_from(first.text, c, -2)
    turns = user_turns(messages, middle_start, len(messages))
    requests = [t for t in turns if t.asked is None]
    for turn in turns:
        if turn.asked is not None:
            c.add("## Key Decisions", f"- Asked: {_clip(plain(turn.asked), 160)} — user: {normalize(turn.text)}",
                  USER_WORDS, turn.index)
        rules_from(turn.text, c, turn.index)
    for n, turn in enumerate(requests):
        if n == len(requests) - 1:
            label = "Latest request"
        elif n == 0 and first is None and not carried_goal:
            label = "Task"
        else:
            label = "Request"
        c.add("## Goal", f"- {label}: {quoted(turn.text)}", USER_WORDS, turn.index)
    return (requests[-1].index, requests[-1].text) if requests else None


def rules_from(text: str, c: Collector, order: int) -> None:
    """The turn's sentences that bind the work, each once (the same rule said twice is one line)."""
    for s in sentences(text):
        s = s.strip()
        if RULE.search(_ABOUT_ME.sub(" ", s)) and 3 <= len(s.split()) and len(s) <= 400:
            key = ("rule", normalize(s).lower().rstrip("."))
            if key not in c.seen:
                c.seen.add(key)
                c.add("## Constraints & Preferences", "- " + normalize(s), KEY, order)


def _clip(text: str, limit: int) -> str:
    text = normalize(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
