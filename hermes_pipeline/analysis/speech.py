"""Talk turned into state: what of the agent's and the user's words a summary may carry, and how.

An agent narrates ("Let me check the build.", "Perfect! Now I'll fix it.",
"Done."): a summary wants the state behind the words. These helpers decide
which sentences are talk (`is_talk`), write an intention as the task it names
(`as_task`: "Let me update the formulas" -> "update the formulas"), tell a
choice with its reason (`is_decision`) from a code fragment
(`is_code_fragment`), and a user's acknowledgement ("ok", "go on") from a
request (`is_ack`). The quality stage counts a summary's talk with `is_talk`
too (the row's `stats`).
"""
from __future__ import annotations

import re

# interjections an agent opens a sentence with; they carry nothing
_INTERJECTION = re.compile(
    r"^(?:(?:perfect|great|excellent|awesome|good|nice|ok(?:ay)?|alright|all right|right|sure|yes|yep|hmm+|ah|oh|"
    r"wow|cool|got it|understood|i see|interesting|exactly|fantastic|wonderful|done|fixed)\b[!.,:;]*\s*)+", re.I)
# openers of an intention: what follows is the task
_INTENT_OPENER = re.compile(
    r"^(?:(?:now|next|then|first|finally|also|so|and|ok)\b,?\s+)*"
    r"(?:let me|let's|let us|i'll|i will|i'm going to|i am going to|i need to|i should|i want to|i'd like to|"
    r"we need to|we'll|we will|we should|we're going to|i can|i must|time to)\s+", re.I)
_LEADING_FILLER = re.compile(r"^(?:now|next|then|first|finally|also|so|and)\b,?\s+", re.I)
_TALK_START = re.compile(
    r"^(?:let me|let's|let us|i'll|i will|i'm|i am|i need|i think|i see|i can|i should|i notice|i found|i've|"
    r"i have|now\b|next,|then,|ok\b|okay|great|perfect|excellent|awesome|good\b|sure|alright|actually|hmm|"
    r"first,|looking at|it looks|it seems|looks like|wait|oops|sorry|done\b|fixed\b|all set|"
    r"the user\b|user (?:wants|asked|said|is)\b)", re.I)
# a thought, not a finding: a guess, a doubt, a condition, a sentence that trails off
_SPECULATION = re.compile(
    r"^(?:maybe|perhaps|what if|reconsider|possibl|probabl|i suspect|i think|i guess|i wonder|if\b|unless|or\b|when\b|"
    r"but\b|hmm|wait|actually|let me|let's|hypothes|alternative(?:ly)?\b|however|regardless|given\b|since\b|"
    r"although|though\b|while\b)|\.\.\.|…|\?|\b(?:likely|probably|might|seems?|suggests?|i suspect|not sure)\b", re.I)
# a name, a number, a path, a quoted symbol: what makes a sentence say something particular
_SPECIFIC = re.compile(r"`[^`]+`|\d|\w/\w|\w\.\w|\w_\w|[a-z][A-Z]|#\d")
_BULLET_MARK = re.compile(r"^(?:[-*+•]\s+|\d+[.)]\s+|\(earlier\)\s+)")
_ACK_ONLY = re.compile(r"^[\W\d_]*(?:\S+\s?){1,3}[.!]$")     # "Done." "All good!"
# what marks a sentence as a choice made for a reason
# a choice in so many words: decided, chose, went with, the fix, the root cause, a setting
_CHOSEN = re.compile(
    r"\b(?:decided|decision|chose|opt(?:ed)? for|going with|go with|the fix is|root cause|trade-?off|switched to|"
    r"(?:i'll|we'll|let's|will) switch to|prefer(?:red)? [\w` -]{1,40} over|set (?:the )?[\w -]{1,40}? to \d)", re.I)
# what a choice replaces: a choice when the agent states it as its own intention ("I'll use X instead of Y")
_REPLACES = re.compile(r"\b(?:instead of|rather than)\b", re.I)
_CODE_MARKS = ("{", "}", ";", "=>", "()", "*/", "/*", " = ", "::", "->")
_CODE_START = re.compile(r"^(?:/\*|\*|//|#include|#define|def |class |function |const |let |var |import |from \w+ import|"
                         r"return\b|if \(|for \(|[\w.]+\(.*\)\s*[;{]?$)")
QUESTION = re.compile(r"\?\s*$|\b(?:let me know|would you like|do you want|should i|shall i|which (?:one|option)|"
                      r"please (?:confirm|choose|provide))\b", re.I)
# a user turn that only acknowledges or greets (in any language: short, no content marks)
_CONTENT_MARK = re.compile(r"[\d/\\._`@#:=(){}\[\]<>]")


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(])")


def sentences(text: str) -> list[str]:
    out = []
    for block in text.splitlines():
        out += [s.strip() for s in _SENTENCE.split(block.strip()) if s.strip()]
    return out


_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")


def plain(sentence: str) -> str:
    """A sentence as a bullet's text: its own list mark and Markdown emphasis removed."""
    return _LIST_MARK.sub("", sentence).replace("**", "").strip()


def asks(text: str) -> str | None:
    """The question an agent's message ends with (one of its last two sentences), not one inside a list."""
    found = [s for s in sentences(text)[-2:] if QUESTION.search(s)]
    return found[-1] if found else None


def without_interjection(sentence: str) -> str:
    """The sentence without the "Perfect! " or "Great, " it opened with."""
    stripped = _INTERJECTION.sub("", sentence).strip()
    return stripped or sentence.strip()


_CLAUSE = re.compile(r";\s+|:\s+|\s+—\s+|,\s+(?=(?:so|and|then|now|next)\b)")


def as_task(sentence: str) -> str | None:
    """An intention as the task it names ("Now let me run the tests:" -> "run the tests"; "The test fails;
    next I'll fix the rounding" -> "fix the rounding"), or None when the sentence states no intention."""
    for clause in [sentence.strip(), *_CLAUSE.split(sentence.strip())[1:]]:
        text = without_interjection(clause)
        found = _INTENT_OPENER.match(text)
        if not found:
            continue
        task = text[found.end():].strip().rstrip(":").strip()
        task = re.sub(r"^(?:first|now|also|then|quickly|just)\s+", "", task, flags=re.I)
        if len(task.split()) >= 2:
            return task          # as written: a fact quoted from it stays verbatim
    return None


MIN_NOTE_WORDS = 3       # "fix it": what it means was said around it
BACK_REFERENCE_WORDS = 6   # a note this short that refers back ("fix these one by one") says nothing alone
_BACK_REFERENCE = re.compile(r"\b(?:it|this|these|them|that|those)\b", re.I)
_MANNER = re.compile(r"^be\b", re.I)     # "be more specific": how to go on, not a change


def says_little(note: str, min_words: int = MIN_NOTE_WORDS) -> bool:
    """A note or task that only makes sense where it was said: a few words, a manner ("be more specific"), or a
    short one that refers back ("fix these one by one") and names nothing particular."""
    words = len(note.split())
    if words < min_words or _MANNER.match(note):
        return True
    return words < BACK_REFERENCE_WORDS and bool(_BACK_REFERENCE.search(note)) and not _SPECIFIC.search(note)


def as_statement(sentence: str) -> str:
    """A sentence with its interjections and leading "Now," / "So," removed."""
    return _LEADING_FILLER.sub("", without_interjection(sentence.strip())).strip()


def is_talk(text: str) -> bool:
    """A line that is conversation, not state: an opener of speech, or an acknowledgement alone."""
    text = _BULLET_MARK.sub("", text.strip()).strip("*_—–-: ")
    return bool(_TALK_START.match(text)) or (len(text) < 25 and bool(_ACK_ONLY.match(text))
                                             and not _CONTENT_MARK.search(text))


def is_code_fragment(text: str) -> bool:
    stripped = text.strip().strip("`")
    return bool(_CODE_START.match(stripped)) or sum(mark in stripped for mark in _CODE_MARKS) >= 2


def is_speculation(sentence: str) -> bool:
    return bool(_SPECULATION.search(sentence.strip()))


def has_specifics(text: str) -> bool:
    return bool(_SPECIFIC.search(text))


def is_decision(sentence: str) -> bool:
    """A choice: stated in so many words, or an intention with what it replaces (not code, not a question,
    not a guess or an observation)."""
    if QUESTION.search(sentence) or is_speculation(sentence) or is_code_fragment(sentence) or len(sentence.split()) < 5:
        return False
    return bool(_CHOSEN.search(sentence)) or (bool(_REPLACES.search(sentence)) and as_task(sentence) is not None)


def is_ack(text: str) -> bool:
    """A user turn that only says yes, go on, hello: nothing to do or keep by itself."""
    return len(text.split()) <= 2 and len(text) <= 12 and not _CONTENT_MARK.search(text)
