"""The artifact trail of the embedded summary: Relevant Files (each changed file with its last action, what
the change was for, the names it defines or touches, the first line its last change adds; the files read)
and the last distinct errors of shell/test/build commands, still failing under Blocked or fixed later in
Critical Context. What counts as a file change or an error line is decided by hermes_pipeline.analysis
(artifacts.py, tool_output.py): the same detection the quality score uses."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hermes_pipeline.analysis.artifacts import (
    call_arguments,
    command_key,
    file_actions,
    paired_results,
    shell_command,
    string_leaves,
)
from hermes_pipeline.analysis.code_names import change_excerpt, changed_names
from hermes_pipeline.analysis.probes import MAX_ERRORS
from hermes_pipeline.analysis.speech import as_task, plain, says_little, sentences
from hermes_pipeline.analysis.tool_output import normalize
from hermes_pipeline.summarizers.embedded.grouped_names import grouped_paths
from hermes_pipeline.summarizers.embedded.progress import clip, note
from hermes_pipeline.summarizers.embedded.sections import ARTIFACT, CHATTER, RECENT, USEFUL, Collector
from hermes_pipeline.transcript import message_text, role

_ACTION_WORD = {"written": "Created/written", "edited": "Edited", "moved": "Moved away", "deleted": "Deleted"}
NAMES_PER_LINE = 16
QUOTED_KEY = 60             # characters of an error line that tell it from others (a quote may be clipped)
OUTLINE_CHARS = 300         # of what a document the agent wrote says
_LOCATION = re.compile(r"^\S+?:\d+(?::\d+)?:\s*")   # "src/a.c:12:5: " before a compiler message


def add_files(probes, messages: list[dict], start: int, c: Collector) -> None:
    """Relevant Files: each changed file with its last action, what its changes were for, the names they
    define and the first line the last one adds; the files read; brace groups for when they do not all fit."""
    by_action: dict[str, list[str]] = {}
    for path, actions in probes.files_written.items():
        by_action.setdefault(actions[-1], []).append(path)
    at = probes.written_at   # the files changed last are the last to go when the budget is short
    for action in ("written", "edited", "moved", "deleted"):
        paths = by_action.get(action, [])
        for group, members in grouped_paths(paths):
            last = max(at[p] for p in members)
            c.add("## Relevant Files", f"- {_ACTION_WORD[action]}: {group}", ARTIFACT, last, form="compact")
    changes = _changes(messages, start)
    for path, actions in probes.files_written.items():
        said = list(changes[path].notes)[-3:] if path in changes else []
        why = f": {clip('; '.join(said), 160)}" if said else ""
        c.add("## Relevant Files", f"- {path} ({', '.join(actions)}){why}", ARTIFACT, at[path], form="full")
    for group, members in grouped_paths(probes.files_read, limit=8):
        last = max(probes.read_at[p] for p in members)
        c.add("## Relevant Files", f"- Read: {group}", RECENT, last, form="compact-read")
    for path in probes.files_read:
        c.add("## Relevant Files", f"- {path} (read)", RECENT, probes.read_at[path], form="full-read")
    for path, change in changes.items():
        if path not in probes.files_written:
            continue
        for text, order in change.notes.items():   # beside brace groups, what each change was for
            c.add("## Relevant Files", f"- {_short(path)}: {clip(text, 120)}", RECENT, order, form="compact")
        for k in range(0, len(change.names), NAMES_PER_LINE):
            chunk = ", ".join(change.names[k:k + NAMES_PER_LINE])
            c.add("## Relevant Files", f"- {_short(path)} names: {chunk}", USEFUL if k == 0 else RECENT, change.last)
        if change.excerpt:
            c.add("## Relevant Files", f"- {_short(path)} last change adds: `{clip(change.excerpt, 120)}`",
                  CHATTER, change.last)
        if change.outline:      # a document the agent wrote (a status file, a plan): what it says
            c.add("## Relevant Files", f"- {_short(path)} says: {clip(change.outline, OUTLINE_CHARS)}", RECENT,
                  change.last)

def _changes(messages: list[dict], start: int) -> dict[str, "_Change"]:
    """Per changed path: what its changes were for (the call's note, else the intention the agent stated
    with it, of a few words at least), the names they define or touch, and what the last one adds."""
    changes: dict[str, _Change] = {}
    for i in range(start, len(messages)):
        if role(messages[i]) != "assistant":
            continue
        intent = _intent_of(message_text(messages[i]))
        for call, result, _ in paired_results(messages, i):
            changed = [p for p, a in file_actions(call, result) if a != "read"]
            if not changed:
                continue
            change = changes.setdefault(changed[0], _Change())
            said = note(call_arguments(call)) or intent
            if said and not says_little(said):
                change.notes.setdefault(normalize(said), i)
            change.names += [n for n in changed_names(call) if n not in change.names]
            change.excerpt = change_excerpt(call) or change.excerpt
            change.outline = _outline(changed[0], call) or change.outline
            change.last = i
    return changes

def add_errors(probes, quoted: set[str], c: Collector, messages: list[dict] | None = None) -> None:
    """The last MAX_ERRORS distinct error lines verbatim; older ones after them, alike ones merged; for each of
    the last ones that was fixed, the files changed before the program ran clean (what fixed it)."""
    recent = probes.errors[-MAX_ERRORS:]
    older: dict[str, list] = {}
    for error in probes.errors[:-MAX_ERRORS]:
        older.setdefault(_LOCATION.sub("", error.line) + str(error.fixed), []).append(error)
    # a fixed error an earlier summary quoted is history: it goes before that summary's goal, what it says
    # was done and its files (an open one, or one the middle itself fixed, stays an artifact)
    history = [e.fixed and normalize(e.line)[:QUOTED_KEY] in quoted for e in recent]
    for error, rank, similar in [(e, USEFUL if old else ARTIFACT, 0) for e, old in zip(recent, history)] + [
            (group[0], CHATTER if group[0].fixed else RECENT, len(group) - 1) for group in older.values()]:
        program = command_key(error.command) or "command"
        more = f" (+{similar} alike)" if similar else ""
        if error.fixed:
            c.add("## Critical Context", f"- Error, fixed later ({program}): {error.text}{more}", rank, error.index)
            fixed_by, edits = _changed_until_rerun(messages, error) if messages and not similar else ([], [])
            if fixed_by:
                how = "".join(f" ({path}: `{old}` -> `{new}`)" for path, old, new in edits[:2])
                c.add("## Critical Context", f"- Fixed by changing {', '.join(fixed_by[:4])}{how}: "
                      f"{clip(error.text, 80)}", RECENT if rank == ARTIFACT else CHATTER, error.index)
        else:
            c.add("### Blocked", f"- Still failing ({program}): {error.text}{more}", rank, error.index)


@dataclass
class _Change:
    notes: dict[str, int] = field(default_factory=dict)   # what a change was for -> where it was said
    names: list[str] = field(default_factory=list)
    excerpt: str | None = None                            # the first line the last change adds
    outline: str | None = None                            # a written document's headings and list items
    last: int = 0


_DOCUMENT = re.compile(r"\.(?:md|markdown|txt|rst|org)$", re.I)
_OUTLINE_LINE = re.compile(r"^\s{0,4}(?:#{1,4}\s+|[-*+]\s+|\d{1,2}[.)]\s+)(.+)$")


def _outline(path: str, call: dict) -> str | None:
    """What a document written or edited by a call says, by its headings and list items (the longest text
    the call carries)."""
    if not _DOCUMENT.search(path):
        return None
    texts = [t for t in string_leaves(call_arguments(call)) if "\n" in t]
    if not texts:
        return None
    items = [m.group(1).strip() for line in max(texts, key=len).splitlines() if (m := _OUTLINE_LINE.match(line))]
    return "; ".join(i for i in items if len(i) > 2)[:2 * OUTLINE_CHARS] or None


def _changed_until_rerun(messages: list[dict], error) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The files changed after an error and before its program ran again (the run that came out clean, or the
    next try), and the small edits among those changes (path, old text, new text): what the fix was."""
    program, changed, edits = command_key(error.command), [], []
    for i in range(error.index + 1, len(messages)):
        if role(messages[i]) != "assistant":
            continue
        for call, result, _ in paired_results(messages, i):
            command = shell_command(call)
            if command and command_key(command) == program:
                return changed, edits
            paths = [_short(p) for p, a in file_actions(call, result) if a != "read"]
            changed += [p for p in paths if p not in changed]
            edit = small_edit(call_arguments(call))
            if paths and edit:
                edits.append((paths[0], *edit))
    return [], []


_OLD_KEYS, _NEW_KEYS = ("old_string", "oldText", "old_str", "old"), ("new_string", "newText", "new_str", "new")
SMALL_EDIT_CHARS = 80


def small_edit(args: dict) -> tuple[str, str] | None:
    """(old, new) of an edit call whose two texts are short, on one line each (a fix that can be shown)."""
    old = next((args[k] for k in _OLD_KEYS if isinstance(args.get(k), str)), None)
    new = next((args[k] for k in _NEW_KEYS if isinstance(args.get(k), str)), None)
    if old is None or new is None or old == new:
        return None
    old, new = (re.sub(r"[ \t]+", " ", t.strip()).replace("\n", "\\n") for t in (old, new))   # a line break shown
    if not old or len(old) > SMALL_EDIT_CHARS or len(new) > SMALL_EDIT_CHARS or "`" in old + new:
        return None
    return old, new


def _short(path: str) -> str:
    return "/".join(path.rsplit("/", 2)[-2:])


def _intent_of(text: str) -> str | None:
    """The task an agent's message announced before its calls ("Now let me add X:" -> "Add X")."""
    for s in reversed(sentences(text)):
        task = as_task(plain(s))
        if task:
            return task
    return None
