"""The quality score of one compaction: which of its probes (probes.py) the compacted conversation still names.

Each probe kind's rule for "kept" is in probes.py's notes. WEIGHTS combine the
kinds into one score: files written, errors and open tasks weigh most (losing
them makes the agent redo, re-break or drop work), open errors, user turns,
identifiers and commits next, files read least (they can be read again). A
conversation with no probe at all has no score (None): the run's headline
counts it apart, it does not count as a perfect 1.0.
"""
from __future__ import annotations

import re

from hermes_pipeline.analysis.artifacts import call_arguments, is_plain_path, path_suffixes, path_tokens, string_leaves
from hermes_pipeline.analysis.probes import ErrorProbe, Probes
from hermes_pipeline.analysis.tool_output import normalize, use_tokens
from hermes_pipeline.transcript import is_summary_message, message_text, tool_calls

WEIGHTS = {"files_written": 3.0, "errors": 3.0, "open_tasks": 3.0, "errors_open": 2.0, "user_turns": 2.0,
           "identifiers": 2.0, "commits": 2.0, "files_read": 1.0}
KINDS = tuple(WEIGHTS)


def conversation_text(messages: list[dict]) -> str:
    """Everything a model would read in these messages: text and tool-call arguments, whitespace collapsed."""
    parts = []
    for message in messages:
        parts.append(message_text(message))
        for call in tool_calls(message):
            parts.append(str((call.get("function") or {}).get("name") or ""))
            parts.extend(string_leaves(call_arguments(call)))
    return normalize("\n".join(parts))


_SPACE = " \n\t\r"


class Haystack:
    """The compacted conversation, searched only where a probe could be.

    Every token these checks read is made of non-space characters, so the
    whitespace-delimited chunk around an occurrence of a probe (its value, or
    its file name) tokenizes exactly as the whole text would there: a probe is
    looked up in those chunks instead of tokenizing the whole conversation.
    """

    def __init__(self, text: str):
        self.text = text
        self._paths: dict[str, tuple[set[str], set[str]]] = {}   # file name -> (path tokens, their tails)

    def chunks(self, needle: str):
        """The whitespace-delimited stretches of text around each occurrence of `needle`."""
        text, start = self.text, 0
        while needle and (i := text.find(needle, start)) >= 0:
            left = _last_space_before(text, i) + 1
            space = _SPACE_CHAR.search(text, i + len(needle))
            right = space.start() if space else len(text)
            yield text[left:right]
            start = right

    def has_token(self, value: str) -> bool:
        """Whether the text uses `value` as a token (an id, a number, a URL...)."""
        return any(value in use_tokens(chunk) for chunk in self.chunks(value))

    def _path_tokens(self, path: str) -> tuple[set[str], set[str]]:
        name = path.rsplit("/", 1)[-1]
        if name not in self._paths:
            paths = set().union(*(path_tokens(chunk) for chunk in self.chunks(name)))
            self._paths[name] = paths, {tail for p in paths for tail in path_suffixes(p)[1:]}
        return self._paths[name]

    def names_open(self, line: str) -> bool:
        """Whether the text quotes an error line without calling it fixed just before it."""
        return any("fixed" not in self.text[max(0, i - 60):i].lower() for i in _occurrences(self.text, line))

    def names_path(self, path: str, known: set[str]) -> bool:
        if not is_plain_path(path):
            return path in self.text   # spaces or globs: only the exact text names it
        paths, tails = self._path_tokens(path)
        if path in paths or path in tails:
            return True    # named in full, or inside a longer path that ends with it
        # a relative path that `path` ends with is the same file named from a working directory
        # (`mv tests/x.txt` after reading /repo/tests/x.txt): it makes no tail ambiguous
        others = [q for q in known if q != path and (q.startswith("/") or not path.endswith("/" + q))]
        for tail in path_suffixes(path)[1:]:
            if tail in paths and not any(q == tail or q.endswith("/" + tail) for q in others):
                return True
        return False


_SPACE_CHAR = re.compile("[" + _SPACE + "]")


def _last_space_before(text: str, end: int) -> int:
    """Where the last of _SPACE before `end` is (-1: none), looked for in growing windows back from `end`:
    a chunk is short, and a whitespace character the text lacks would send rfind back to its start each time."""
    low, width = end, 256
    while low > 0:
        low, width = max(0, low - width), width * 4
        found = max(text.rfind(c, low, end) for c in _SPACE)
        if found >= 0:
            return found
    return -1


def _occurrences(text: str, needle: str):
    start = 0
    while needle and (i := text.find(needle, start)) >= 0:
        yield i
        start = i + 1


def check(probes: Probes, compacted_messages: list[dict]) -> dict[str, tuple[list, list]]:
    """(kept, missed) per probe kind."""
    hay = Haystack(conversation_text(compacted_messages))
    known = probes.known_paths | set(probes.files_written) | set(probes.files_read)
    split = lambda items, ok: ([i for i in items if ok(i)], [i for i in items if not ok(i)])
    return {
        "files_written": split(list(probes.files_written), lambda p: hay.names_path(p, known)),
        "files_read": split(probes.files_read, lambda p: hay.names_path(p, known)),
        "user_turns": split(probes.user_turns, lambda units: all(u in hay.text for u in units)),
        "errors": split(probes.errors, lambda e: e.line in hay.text),
        "errors_open": split([e for e in probes.errors if not e.fixed], lambda e: hay.names_open(e.line)),
        "identifiers": split(list(probes.identifiers), hay.has_token),
        "open_tasks": split(probes.open_tasks, lambda t: t in hay.text),
        "commits": split(probes.commits, hay.has_token),
    }


def score(probes: Probes, compacted_messages: list[dict]) -> dict:
    """Per kind {kept, total}, and one weighted `score` in [0, 1] (None when there was nothing to probe)."""
    checked = check(probes, compacted_messages)
    out: dict = {kind: {"kept": len(kept), "total": len(kept) + len(missed)} for kind, (kept, missed) in checked.items()}
    weighted = [(WEIGHTS[k], out[k]["kept"] / out[k]["total"]) for k in KINDS if out[k]["total"]]
    out["score"] = round(sum(w * r for w, r in weighted) / sum(w for w, _ in weighted), 4) if weighted else None
    out["missed"] = {kind: [_shown(item) for item in missed] for kind, (_, missed) in checked.items()}
    return out


def _shown(item) -> str:
    """A missed probe as the manifest lists it: a path, a line, a turn's first unit, a value."""
    if isinstance(item, ErrorProbe):
        return item.line
    return item[0] if isinstance(item, list) else item


def compaction_bounds(original: list[dict], compacted: list[dict]) -> tuple[int, int] | None:
    """(head_end, tail_start) of a compaction, read off its output: head + one summary + tail.

    The head and the tail are the input's own messages, so their lengths give the
    middle that the summary replaced. None when the output has no summary.
    """
    summaries = [i for i, m in enumerate(compacted) if is_summary_message(m)]
    if not summaries:
        return None
    head_end = summaries[-1]
    return head_end, len(original) - (len(compacted) - head_end - 1)
