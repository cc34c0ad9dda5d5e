"""How much of a conversation its compaction still holds: the built-in score, made to agree with the judged exam.

The exam's questions ask for the facts of the work a compaction removed: exact values, names, paths,
error codes, what the user said and chose. So the score counts facts: the distinctive tokens (a path, an
identifier, a number, a version, a hash, a URL) of what the user and the agent said and did (their words,
the calls' arguments; tool output alone is the work's material, not what it leaned on) and the content
words of the user's own turns, in the messages the compaction did not keep as they were, each once,
weighted by how often the conversation mentions it (1 + ln of its mentions). A fact is kept when the
compacted conversation, whatever wrote it (ours, another compactor, an agent's own summary), still has it
as a token. `score` = the kept share of the weight, in [0, 1]; None when the removed messages hold no
fact. Which messages were removed: the compaction's own span when known, else the messages of the
conversation that the compacted one does not hold as they were. `per_kind` partitions the facts the way
the exam's questions are kinds: artifact (paths, hashes), decision (the user's words), continuation (what
the last turns leaned on), recall (the other exact values). Checked against the judge: benchmarks/exam_agreement.py.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hermes_pipeline.analysis.probes import substantive_user_text
from hermes_pipeline.analysis.score import conversation_text
from hermes_pipeline.transcript import is_summary_message, message_text, role, tool_calls

KINDS = ("recall", "artifact", "continuation", "decision")
_TOKEN = re.compile(r"[\w][\w./@:+#~-]*[\w/]|\w\w")
_PATHLIKE = re.compile(r"/[\w.-]|\.[A-Za-z]{1,5}$")
_HASH = re.compile(r"^(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}$")
_DISTINCT = re.compile(r"[/_]|\d|[a-z][A-Z]|\w\.\w")
_WORD = re.compile(r"[A-Za-z][a-z]{4,}")
# common words the user writes that name nothing of the work
_PLAIN = frozenset("""about above after again against almost along already also although always among another
anything around because before being below between both cannot could doing during each either else enough
every everything first following further getting going great having here however instead into itself just
keep know last later least less let like little look looking made make makes making many maybe might more
most much must need needs never next nothing okay once only other others otherwise over please probably
quite rather really right same seems should since some something still such sure take than thank thanks that
their them then there these they thing things think this those though through thus today together under
until very want wants well were what whatever when where whether which while will with within without
would write wrong your yours yeah""".split())
TAIL_SHARE = 0.15        # the last messages of the conversation: what the work ended on


@dataclass(frozen=True)
class Fact:
    text: str
    kind: str
    weight: float


def _tokens(text: str) -> list[str]:
    return [t.rstrip(".:") for t in _TOKEN.findall(text)]


def _distinct(token: str) -> bool:
    if len(token) < 3 or token.isdigit() and len(token) < 2:
        return False
    return bool(_DISTINCT.search(token))


def _said(message: dict) -> str | None:
    """What the user or the agent said and did in a message (None: a tool's output, a system prompt, a summary)."""
    if role(message) in ("tool", "system") or is_summary_message(message):
        return None
    if role(message) == "user":
        return substantive_user_text(message)
    return conversation_text([message]) if tool_calls(message) else message_text(message)


def facts(messages: list[dict], counted: range | None = None) -> list[Fact]:
    """The facts of the messages in `counted` (all of them by default), each with its kind and weight: the
    mentions are counted over every message, so a fact the kept turns lean on too weighs as much."""
    counted = range(len(messages)) if counted is None else counted
    said: dict[str, float] = {}
    last: dict[str, int] = {}
    kind_of: dict[str, str] = {}
    n = len(messages)
    inside: set[str] = set()
    distinct: dict[str, bool] = {}      # each token tested once per conversation: most recur
    for index, message in enumerate(messages):
        text = _said(message)
        if not text:
            continue
        seen = set()
        for token in set(_tokens(text)):
            known = distinct.get(token)
            if known is None:
                known = distinct[token] = _distinct(token)
            if known:
                seen.add(token)
        if role(message) == "user":
            seen |= {w.lower() for w in _WORD.findall(text)} - _PLAIN
        for token in seen:
            said[token] = said.get(token, 0.0) + 1.0
            last[token] = index
            if token not in kind_of:      # its kind is its first mention's
                kind_of[token] = ("artifact" if _PATHLIKE.search(token) or _HASH.match(token)
                                  else "recall" if distinct.get(token) else "decision")
        if index in counted:
            inside |= seen
    tail = n - max(1, int(n * TAIL_SHARE))
    out = []
    for token in inside:
        kind = "continuation" if last[token] >= tail and kind_of[token] != "decision" else kind_of[token]
        out.append(Fact(token, kind, 1.0 + math.log(said[token])))
    return sorted(out, key=lambda f: f.text)


def removed_messages(original: list[dict], compacted: list[dict]) -> list[int]:
    """The messages of `original` that `compacted` does not hold as they were (each kept one matched once)."""
    held: dict[str, int] = {}
    for message in compacted:
        text = conversation_text([message])
        held[text] = held.get(text, 0) + 1
    removed = []
    for index, message in enumerate(original):
        text = conversation_text([message])
        if held.get(text, 0):
            held[text] -= 1
        else:
            removed.append(index)
    return removed


def _kept_tokens(messages: list[dict]) -> set[str]:
    kept: set[str] = set()
    for message in messages:
        text = conversation_text([message]) if tool_calls(message) else message_text(message)
        kept.update(_tokens(text))
        kept.update(map(str.lower, _WORD.findall(text)))
    return kept


def recall(original: list[dict], compacted: list[dict], removed: range | list[int] | None = None) -> dict:
    """{score, per_kind: {kind: share}, facts: {kept, total}, missed: the heaviest facts left out}, of the facts
    of the `removed` messages of `original` (default: those `compacted` does not hold as they were)."""
    removed = removed_messages(original, compacted) if removed is None else removed
    found = facts(original, set(removed))
    kept = _kept_tokens(compacted)
    total = sum(f.weight for f in found)
    if not total:
        return {"score": None, "per_kind": {}, "facts": {"kept": 0, "total": 0}, "missed": []}
    held = [f for f in found if f.text in kept]
    per_kind = {}
    for kind in KINDS:
        weights = [f.weight for f in found if f.kind == kind]
        if weights:
            per_kind[kind] = round(sum(f.weight for f in held if f.kind == kind) / sum(weights), 4)
    missed = sorted((f for f in found if f.text not in kept), key=lambda f: -f.weight)[:20]
    return {"score": round(sum(f.weight for f in held) / total, 4), "per_kind": per_kind,
            "facts": {"kept": len(held), "total": len(found)}, "missed": [f.text for f in missed]}


def shown_facts(missed: list[str], secrets) -> list[str]:
    """Missed facts as a row or a report may list them: none that is, or holds a piece of, a secret the
    conversation shows (`secrets`: its analysis.secret_scan.SecretScan)."""
    if not missed:
        return []
    shown = secrets.summary("\n".join(missed)).split("\n")
    return [fact for fact, clean in zip(missed, shown) if fact == clean]
