"""The fake provider's answers to the exam's requests (hermes_pipeline/exam/): deterministic, from what each
request reads, so that an exam judges what a compaction kept.

- questions: from the REMOVED turns, pairs of a distinctive word (a path, an identifier, a number with
  letters) seen once in the conversation (else a word seen once, else one always followed by the same
  word) and the word after it: "Which word follows `X` in the work?", reference "Y"; the kinds in turn;
- answers: for each question, the word after `X` in the context given, else "not in context";
- grades: 5 for an answer equal to the reference, 0 otherwise.
"""
from __future__ import annotations

import json
import re

EXAM_KINDS = ("recall", "artifact", "continuation", "decision")
_WORD = re.compile(r"\S+")
_EDGE = "`'\"()[]{}<>,;:!?*"
_DISTINCT = re.compile(r"^(?=.{4,80}$)(?=.*[A-Za-z])(?=.*[/_.\d-])[\w./@+-]+$")
_QUESTION = re.compile(r"Which word follows `([^`]+)`")


def is_exam_request(system: str) -> str | None:
    """Which exam request `system` opens (questions, answers, grades), or None."""
    head = system.lstrip()[:80]
    for marker, kind in (("You write an exam", "questions"), ("You are resuming", "answers"),
                         ("You grade the answers", "grades")):
        if head.startswith(marker):
            return kind
    return None


def _words(text: str) -> list[str]:
    # edges stripped again after a sentence's full stop: "`name`." is the word name, as a question can quote it
    return [w.strip(_EDGE).rstrip(".").strip(_EDGE) for w in _WORD.findall(text)]


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    return text[i + len(start):j] if i >= 0 and j >= 0 else ""


def _count(system: str) -> int:
    found = re.search(r"Write (\d+) questions", system)
    return int(found.group(1)) if found else 12


def questions(system: str, user: str) -> str:
    removed = _words(_between(user, "<removed>", "</removed>"))
    words = _words(_between(user, "<kept-before>", "</kept-before>")) + removed \
        + _words(_between(user, "<kept-after>", "</kept-after>"))       # the conversation, not the framing
    seen = {w: words.count(w) for w in set(removed)}
    follows: dict[str, set] = {}
    for i, word in enumerate(words[:-1]):
        follows.setdefault(word, set()).add(words[i + 1])
    count = _count(system)
    # a distinctive word seen once in the conversation first; then any word seen once, then one always
    # followed by the same word,
    # each asked about at its first place in the removed turns
    tiers = (lambda w: seen.get(w) == 1 and _DISTINCT.match(w), lambda w: seen.get(w) == 1 and len(w) >= 4,
             lambda w: len(w) >= 3 and len(follows.get(w, ())) == 1)
    pairs, used = [], set()
    for source, fits in [(removed, fits) for fits in tiers] + [(words, tiers[-1])]:   # a short span: the rest too
        found = [(w, source[i + 1]) for i, w in enumerate(source[:-1])
                 if w not in used and source[i + 1] and fits(w) and source.index(w) == i]
        step = max(1, len(found) // max(1, count - len(pairs)))     # spread over the span, not its first lines
        for word, follow in found[::step][:count - len(pairs)]:
            pairs.append((word, follow))
            used.add(word)
        if len(pairs) >= count:
            break
    chosen = pairs or [("nothing", "here")]
    return json.dumps({"questions": [
        {"kind": EXAM_KINDS[n % len(EXAM_KINDS)], "question": f"Which word follows `{word}` in the work?",
         "answer": follow} for n, (word, follow) in enumerate(chosen)]})


def answers(user: str) -> str:
    context = _words(_between(user, "<context>", "</context>"))
    position = {}
    for i, word in enumerate(context[:-1]):
        position.setdefault(word, i)
    asked = _QUESTION.findall(_between(user, "<questions>", "</questions>"))
    return json.dumps({"answers": [context[position[x] + 1] if x in position else "not in context"
                                   for x in asked]})


def grades(user: str) -> str:
    blocks = re.findall(r"Reference: (.*)\n\s*Answer: (.*)", user)
    return json.dumps({"grades": [{"grade": 5 if answer.strip() == reference.strip() else 0,
                                   "note": "same word" if answer.strip() == reference.strip() else "another word"}
                                  for reference, answer in blocks]})


def exam_reply(system: str, user: str) -> str | None:
    """The reply to an exam request, or None when `system` opens none."""
    kind = is_exam_request(system)
    if kind == "questions":
        return questions(system, user)
    if kind == "answers":
        return answers(user)
    if kind == "grades":
        return grades(user)
    return None
