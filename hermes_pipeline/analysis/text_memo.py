"""What is read off a text (its error lines, its tokens, a parsed command or call), remembered for one
conversation: the probes, the summarizer and the score read the same texts several times.

The memo belongs to the conversation being compacted (ConversationAnalysis owns one) and goes
with it: nothing to clear between conversations, and conversations compacted side by side in
threads each have their own (the active memo is a context variable). Outside a memo a function
computes its answer afresh.
"""
from __future__ import annotations

import functools
from contextvars import ContextVar
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)
_active: ContextVar["TextMemo | None"] = ContextVar("text_memo", default=None)


class TextMemo:
    """Answers by function and arguments; `with memo:` makes it the one memoized functions use."""

    def __init__(self):
        self.answers: dict[Callable, dict] = {}
        self._tokens: list = []

    def __enter__(self) -> "TextMemo":
        self._tokens.append(_active.set(self))
        return self

    def __exit__(self, *exc) -> None:
        _active.reset(self._tokens.pop())


def per_conversation(function: F) -> F:
    """`function` (of hashable arguments, with an answer its callers only read) remembered in the
    active TextMemo."""
    @functools.wraps(function)
    def remembered(*args):
        memo = _active.get()
        if memo is None:
            return function(*args)
        answers = memo.answers.setdefault(function, {})
        if args not in answers:
            answers[args] = function(*args)
        return answers[args]
    return remembered     # type: ignore[return-value]
