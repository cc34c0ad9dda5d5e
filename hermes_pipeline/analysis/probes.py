"""The probes of a compaction: what the removed middle held that an agent needs next.

No model is involved and nothing a summary claims is trusted: the probes come
from the input alone (`extract_probes`); score.py says which of them the
compacted conversation still carries. Linear in the size of the conversation.

Probe kinds and when each counts as kept:
- files_written: files the agent created, edited, moved or deleted in the
  middle (write/edit tools, apply_patch and unified-diff headers, `rm`/`mv`/
  `git rm`/`sed -i`/heredoc writes in shell commands). Failed edits don't count.
  On a re-compaction, the files an earlier summary of ours in the middle lists
  as changed count too (earlier_trail.py), and so do the errors it quotes.
- files_read: files read with a read/view tool in the middle (not also written).
  A path is kept when the compacted text names it in full, or names a suffix of
  it that has a directory part (`src/foo.c`, never a bare `foo.c` unless the
  path itself is bare) and that no other path of the conversation ends with (a
  relative path the path itself ends with is the same file, named from a working
  directory).
- user_turns: user messages of the middle minus what the harness injected
  (system reminders, IDE and local-command echoes, hook feedback), and minus
  a bare acknowledgement ("ok", "go on") unless it answers the agent's question.
  A turn is kept when its text (whitespace collapsed) is contained in the
  compacted text; a long turn (> LONG_TURN_CHARS) is kept when each of its
  distinctive sentences is.
- errors: the last MAX_ERRORS distinct error lines that shell/test/build
  commands printed in the middle, each marked fixed when a later run of the
  same program printed no error, else open ("No such file" about a path the
  agent had just deleted or moved is no error). Kept when the line (whitespace
  collapsed, first ERROR_CHARS characters) is contained in the compacted text.
- errors_open: those still open at the cut. Kept when quoted without "fixed"
  just before it: a summary that calls an open error fixed misstates the state.
- open_tasks: the open items of the latest task list of the middle (TodoWrite,
  update_plan...), or without one the plan the agent last stated, as tasks
  (work_state.py). Kept when the first STATE_CHARS characters are named.
- commits: hashes of the commits made in the middle. Kept as a whole token.
- identifiers: ids, codes, hashes, URLs, emails, ports, issue numbers and
  amounts first seen in a tool result of the middle and used again later by
  the agent or the user (their text or tool-call arguments). Kept when present
  as a whole token.

Probes never hold a secret (redact.py's patterns): user turns and error lines
are matched as the summary boundary redacts them, and a secret used again later
is no identifier to keep. So the manifest's `missed` lists carry none either.

"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Iterable

from hermes_pipeline.analysis.artifacts import (
    call_arguments,
    command_key,
    file_actions,
    is_viewer_only,
    paired_results,
    shell_command,
    string_leaves,
)
from hermes_pipeline.analysis.earlier_trail import read_trail
from hermes_pipeline.analysis.redact import redact_secrets
from hermes_pipeline.analysis.speech import asks, is_ack, sentences
from hermes_pipeline.analysis.tool_output import (
    WantedIdentifiers,
    clip_verbatim,
    error_lines,
    error_probe_text,
    identifier_candidates,
    normalize,
    use_tokens,
)
from hermes_pipeline.analysis.user_text import user_text
from hermes_pipeline.analysis.work_state import state_probes
from hermes_pipeline.transcript import is_summary_message, message_text, role, tool_calls

MAX_ERRORS = 8            # the most recent distinct error lines are the ones an agent needs next
STATE_CHARS = 100         # an open task counts as named when its first characters are

# -- user turns --------------------------------------------------------------------------

LONG_TURN_CHARS = 600     # longer user turns are matched on their distinctive sentences


def substantive_user_text(message: dict) -> str:
    """What the user wrote, without what a harness injected into the user turn (user_text.py)."""
    return user_text(message)


REQUIREMENT = re.compile(r"\b(must|never|always|don'?t|do not|avoid|prefer|should|shall|need|require|only|"
                         r"make sure|ensure|no more than|at least|at most|instead|without)\b", re.I)


def user_turn_units(text: str) -> list[str]:
    """What must be present for a user turn to count as kept."""
    if len(text) <= LONG_TURN_CHARS:
        return [normalize(text)]
    parts = sentences(text)
    chosen = [parts[0], parts[-1]] + [s for s in parts if REQUIREMENT.search(s)]
    units = []
    for s in chosen:
        s = normalize(s)[:200]
        if len(s) >= 12 and s not in units:
            units.append(s)
    return units or [normalize(text)[:200]]


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
    open_tasks: list[str] = field(default_factory=list)   # open task-list items (else the last plan), as named
    commits: list[str] = field(default_factory=list)      # hashes of the commits made

    def totals(self) -> dict[str, int]:
        return {"files_written": len(self.files_written), "files_read": len(self.files_read),
                "user_turns": len(self.user_turns), "errors": len(self.errors),
                "errors_open": sum(not e.fixed for e in self.errors), "identifiers": len(self.identifiers),
                "open_tasks": len(self.open_tasks), "commits": len(self.commits)}



_QUOTED = re.compile(r"['‘`\"]([^'’`\"\s]+)['’`\"]")
_NOT_FOUND = re.compile(r"No such file or directory|cannot access|not found|does not exist|cannot find|"
                        r"cannot stat", re.I)


def _names_gone(line: str, gone: set[str]) -> bool:
    """Whether a "not found" line is about a path deleted or moved away before: named, or matched by the
    pattern it quotes (`ls: cannot access 'img/smoke*'`)."""
    if any(name in line for name in gone):
        return True
    quoted = [q for q in _QUOTED.findall(line) if "*" in q or "?" in q]
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in quoted for name in gone)


def extract_probes(messages: list[dict], removed_indices: Iterable[int], max_errors: int | None = MAX_ERRORS) -> Probes:
    """The probes of the removed messages; the rest of the conversation decides 'later'.

    `max_errors=None` keeps every distinct error line, not only the last ones.
    """
    removed = set(removed_indices)
    last_removed = max(removed, default=-1)
    probes = Probes()
    written: dict[str, list[str]] = {}
    read: list[str] = []
    errors: dict[str, tuple] = {}     # normalized line -> (result index, position, command, key, verbatim line)
    clean_runs: dict[str, int] = {}                         # program -> last index of a run without errors
    first_seen: dict[str, tuple[int, str | None]] = {}      # id -> (index, what it is if first seen in a result)
    last_use: dict[str, int] = {}
    position = 0
    gone: set[str] = set()                                  # paths (and names) deleted or moved away so far
    asked: str | None = None                                # the question the agent's last words ended with
    used_tokens = {index: use_tokens(_used_text(message)) for index, message in enumerate(messages)
                   if role(message) != "tool"}
    # only a value some turn uses can become a probe: patterns that cannot yield one are not run
    wanted = WantedIdentifiers(set().union(*used_tokens.values()))
    for index, message in enumerate(messages):
        r = role(message)
        if r == "tool":
            if index <= last_removed:      # a value first seen after the middle cannot be one of its probes
                for value, kind in identifier_candidates(message_text(message), wanted):
                    first_seen.setdefault(value, (index, kind))
            continue
        if index in removed and r in ("user", "assistant") and is_summary_message(message):
            carried = read_trail(message_text(message))    # an earlier summary's trail is the middle's too
            for path, actions in carried.files.items():
                probes.known_paths.add(path)
                known = written.setdefault(path, [])
                known += [a for a in actions if a not in known]
                probes.written_at[path] = index
            for program, line, fixed in carried.errors:
                position += 1
                errors.pop(normalize(line), None)
                errors[normalize(line)] = (index, position, program, program, line, fixed)
        elif r == "user" and index in removed:
            substance = redact_secrets(substantive_user_text(message))   # as a summary may quote it
            if substance and (asked or not is_ack(substance)):     # "ok", "go on": nothing to keep, unless asked
                probes.user_turns.append(user_turn_units(substance))
        if r == "user":
            asked = None
        elif r == "assistant" and message_text(message).strip():
            asked = asks(message_text(message))
        for token in used_tokens[index]:
            first_seen.setdefault(token, (index, None))
            last_use[token] = index
        if r != "assistant" or not tool_calls(message):
            continue
        for call, result, result_index in paired_results(messages, index):
            for path, action in file_actions(call, result):
                probes.known_paths.add(path)
                if action in ("deleted", "moved"):
                    gone.update(n for n in (path, path.rsplit("/", 1)[-1]) if len(n) >= 3)
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
                for line in map(redact_secrets, found):
                    if _NOT_FOUND.search(line) and _names_gone(line, gone):
                        continue       # the agent checking that what it removed is gone: no error
                    position += 1
                    errors.pop(normalize(line), None)        # re-inserted: dict order = last occurrence
                    errors[normalize(line)] = (result_index, position, command, key, line, False)
    probes.files_written = written
    probes.files_read = sorted({p for p in read if p not in written})
    for line, (index, _, command, key, verbatim, fixed) in list(errors.items())[-(max_errors or len(errors) or 1):]:
        probes.errors.append(ErrorProbe(error_probe_text(line), clip_verbatim(verbatim),
                                        normalize(redact_secrets(command))[:200],
                                        fixed or clean_runs.get(key, -1) > index, index))
    if removed:
        tasks, probes.commits = state_probes(messages, min(removed), last_removed + 1)
        # as the summary boundary redacts them, whitespace collapsed, their first STATE_CHARS
        probes.open_tasks = list(dict.fromkeys(normalize(redact_secrets(t))[:STATE_CHARS] for t in tasks))
    for value, (index, kind) in first_seen.items():
        if kind is not None and index in removed and last_use.get(value, -1) > index \
                and redact_secrets(value) == value:      # a secret is no value a summary may keep
            probes.identifiers[value] = kind
    return probes


def _used_text(message: dict) -> str:
    """What a turn says and passes to its tools: where its use of a value shows."""
    return message_text(message) + "\n" + "\n".join(
        s for c in tool_calls(message) for s in string_leaves(call_arguments(c)))
