"""A deterministic quality score for one compaction: what of the removed middle survives.

No model is involved and nothing the summary claims is trusted: the probes come
from the input alone (`extract_probes`), and a probe counts as kept only when
the compacted conversation still carries it (`score`). Both passes are linear
in the size of the conversation.

Probe kinds and when each counts as kept:
- files_written: files the agent created, edited, moved or deleted in the
  middle (write/edit tools, apply_patch and unified-diff headers, `rm`/`mv`/
  `git rm`/`sed -i`/heredoc writes in shell commands). Failed edits don't count.
- files_read: files read with a read/view tool in the middle (not also written).
  A path is kept when the compacted text names it in full, or names a suffix of
  it that has a directory part (`src/foo.c`, never a bare `foo.c` unless the
  path itself is bare) and that no other path of the conversation ends with.
- user_turns: user messages of the middle minus what the harness injected
  (system reminders, local-command echoes, hook feedback). A turn is kept when
  its text (whitespace collapsed) is contained in the compacted text; a long
  turn (> LONG_TURN_CHARS) is kept when each of its distinctive sentences is.
- errors: the last MAX_ERRORS distinct error lines that shell/test/build
  commands printed in the middle, each marked fixed when a later run of the
  same program printed no error, else open. Kept when the line (whitespace
  collapsed, first ERROR_CHARS characters) is contained in the compacted text.
- identifiers: ids, codes, hashes, URLs, emails, ports, issue numbers and
  amounts first seen in a tool result of the middle and used again later by
  the agent or the user (their text or tool-call arguments). Kept when present
  as a whole token.

WEIGHTS combine the kinds into one score: files written and errors weigh most
(losing them makes the agent redo or re-break work), user turns and
identifiers next, files read least (they can be read again).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from hermes_pipeline.artifacts import (
    ERROR_CHARS, clip_verbatim, command_key, is_plain_path, error_lines, error_probe_text, file_actions, identifier_candidates, is_viewer_only,
    normalize, paired_results, path_suffixes, path_tokens, shell_command, string_leaves, call_arguments,
    substantive_user_text, use_tokens, user_turn_units,
)
from hermes_pipeline.transcript import is_summary_message, message_text, role, tool_calls

WEIGHTS = {"files_written": 3.0, "errors": 3.0, "user_turns": 2.0, "identifiers": 2.0, "files_read": 1.0}
KINDS = tuple(WEIGHTS)
MAX_ERRORS = 8            # the most recent distinct error lines are the ones an agent needs next


@dataclass
class ErrorProbe:
    line: str            # what must be present: normalized, clipped to ERROR_CHARS
    text: str            # the line as printed (clipped), for a summary to quote
    command: str         # the command that printed it (clipped)
    fixed: bool          # a later run of the same program printed no error
    index: int


@dataclass
class Probes:
    files_written: dict[str, list[str]] = field(default_factory=dict)   # path -> actions, in order
    files_read: list[str] = field(default_factory=list)
    user_turns: list[list[str]] = field(default_factory=list)   # each turn: the texts that must be present
    errors: list[ErrorProbe] = field(default_factory=list)
    identifiers: dict[str, str] = field(default_factory=dict)   # value -> what it is
    known_paths: set[str] = field(default_factory=set)          # every path seen: decides ambiguous suffixes
    written_at: dict[str, int] = field(default_factory=dict)    # path -> index of its last change
    read_at: dict[str, int] = field(default_factory=dict)       # path -> index of its last read

    def totals(self) -> dict[str, int]:
        return {"files_written": len(self.files_written), "files_read": len(self.files_read),
                "user_turns": len(self.user_turns), "errors": len(self.errors),
                "identifiers": len(self.identifiers)}



def extract_probes(messages: list[dict], removed_indices: Iterable[int], max_errors: int | None = MAX_ERRORS) -> Probes:
    """The probes of the removed messages; the rest of the conversation decides 'later'.

    `max_errors=None` keeps every distinct error line, not only the last ones.
    """
    removed = set(removed_indices)
    probes = Probes()
    written: dict[str, list[str]] = {}
    read: list[str] = []
    errors: dict[str, tuple] = {}     # normalized line -> (result index, position, command, key, verbatim line)
    clean_runs: dict[str, int] = {}                         # program -> last index of a run without errors
    first_seen: dict[str, tuple[int, str | None]] = {}      # id -> (index, what it is if first seen in a result)
    last_use: dict[str, int] = {}
    position = 0
    for index, message in enumerate(messages):
        r = role(message)
        if r == "tool":
            for value, kind in identifier_candidates(message_text(message)):
                first_seen.setdefault(value, (index, kind))
            continue
        text = message_text(message)
        if r == "user" and index in removed and not is_summary_message(message):
            substance = substantive_user_text(message)
            if substance:
                probes.user_turns.append(user_turn_units(substance))
        used = text + "\n" + "\n".join(s for c in tool_calls(message) for s in string_leaves(call_arguments(c)))
        for token in use_tokens(used):
            first_seen.setdefault(token, (index, None))
            last_use[token] = index
        if r != "assistant" or not tool_calls(message):
            continue
        for call, result, result_index in paired_results(messages, index):
            for path, action in file_actions(call, result):
                probes.known_paths.add(path)
                if index not in removed:
                    continue
                if action == "read":
                    read.append(path)
                    probes.read_at[path] = index
                    continue
                actions = written.setdefault(path, [])
                if action in actions:
                    actions.remove(action)      # the list ends with the last action
                actions.append(action)
                probes.written_at[path] = index
            command = shell_command(call)
            if command is None or result is None or is_viewer_only(command):
                continue
            key = command_key(command)
            found = error_lines(message_text(result))
            if not found:
                clean_runs[key] = result_index
            elif result_index in removed:
                for line in found:
                    position += 1
                    errors.pop(normalize(line), None)        # re-inserted: dict order = last occurrence
                    errors[normalize(line)] = (result_index, position, command, key, line)
    probes.files_written = written
    probes.files_read = sorted({p for p in read if p not in written})
    for line, (index, _, command, key, verbatim) in list(errors.items())[-(max_errors or len(errors) or 1):]:
        probes.errors.append(ErrorProbe(error_probe_text(line), clip_verbatim(verbatim), normalize(command)[:200],
                                        clean_runs.get(key, -1) > index, index))
    for value, (index, kind) in first_seen.items():
        if kind is not None and index in removed and last_use.get(value, -1) > index:
            probes.identifiers[value] = kind
    return probes


def conversation_text(messages: list[dict]) -> str:
    """Everything a model would read in these messages: text and tool-call arguments, whitespace collapsed."""
    parts = []
    for message in messages:
        parts.append(message_text(message))
        for call in tool_calls(message):
            parts.append(str((call.get("function") or {}).get("name") or ""))
            parts.extend(string_leaves(call_arguments(call)))
    return normalize("\n".join(parts))


class Haystack:
    """The compacted conversation, indexed once for every probe kind."""

    def __init__(self, text: str):
        self.text = text
        self.paths = path_tokens(text)
        self.path_tails = {tail for p in self.paths for tail in path_suffixes(p)[1:]}
        self.tokens = use_tokens(text)

    def names_path(self, path: str, known: set[str]) -> bool:
        if not is_plain_path(path):
            return path in self.text   # spaces or globs: only the exact text names it
        if path in self.paths or path in self.path_tails:
            return True    # named in full, or inside a longer path that ends with it
        for tail in path_suffixes(path)[1:]:
            if tail in self.paths and not any(q != path and (q == tail or q.endswith("/" + tail)) for q in known):
                return True
        return False


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
        "identifiers": split(list(probes.identifiers), lambda v: v in hay.tokens),
    }


def score(probes: Probes, compacted_messages: list[dict]) -> dict:
    """Per kind {kept, total}, open errors apart, and one weighted `score` in [0, 1]."""
    checked = check(probes, compacted_messages)
    out: dict = {kind: {"kept": len(kept), "total": len(kept) + len(missed)} for kind, (kept, missed) in checked.items()}
    kept_errors, missed_errors = checked["errors"]
    out["errors_open"] = {"kept": sum(not e.fixed for e in kept_errors),
                          "total": sum(not e.fixed for e in kept_errors + missed_errors)}
    weighted = [(WEIGHTS[k], out[k]["kept"] / out[k]["total"]) for k in KINDS if out[k]["total"]]
    out["score"] = round(sum(w * r for w, r in weighted) / sum(w for w, _ in weighted), 4) if weighted else 1.0
    out["missed"] = {
        "files_written": checked["files_written"][1], "files_read": checked["files_read"][1],
        "user_turns": [units[0] for units in checked["user_turns"][1]],
        "errors": [e.line for e in missed_errors], "identifiers": checked["identifiers"][1],
    }
    return out


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
