"""Progress, decisions and next steps of the embedded summary, from what the middle proves.

- Done: completed task-list items, commits, pull requests, pushes, test runs that
  went green (with their counts), non-shell actions that changed something
  (`book_reservation(...) -> ok`), and what the agent reported as finished,
  stated without its interjections. Never a raw command line.
- In Progress: the latest task list's open items, and the action under way at the
  end of the middle (the intention the agent last stated, as a task).
- Blocked: error lines still open at the cut (quality.extract_probes decides:
  a later clean run of the same program closes one; a "not found" about
  something just deleted is none).
- Key Decisions: the agent's choices that give a reason, never code or talk.
- Next Steps: the pending task-list items, the plan the agent last stated, what
  still fails, the latest request when nothing answered it.
"""
from __future__ import annotations

import re

from hermes_pipeline.analysis.artifacts import call_arguments, command_key, file_actions, paired_results, shell_command
from hermes_pipeline.analysis.speech import (
    as_statement,
    as_task,
    has_specifics,
    is_code_fragment,
    is_decision,
    is_speculation,
    is_talk,
    plain,
    sentences,
)
from hermes_pipeline.analysis.tool_output import error_lines, normalize
from hermes_pipeline.analysis.work_state import PLAN_KEYS, TaskList, last_plan, outcomes, statements
from hermes_pipeline.summarizers.embedded.sections import ARTIFACT, CHATTER, KEY, RECENT, USEFUL, Collector
from hermes_pipeline.transcript import message_text, role, tool_calls

MAX_LINE_CHARS = 300
_COMPLETED = re.compile(
    r"^✅|\b(?:now (?:compiles|passes|works|builds|runs)|(?:has|have) been (?:created|added|updated|fixed|removed|"
    r"implemented|moved|merged|renamed|replaced|resolved)|successfully|all (?:\d+ )?tests? pass|builds? cleanly|"
    r"is (?:now )?(?:fixed|done|complete|working|merged))\b", re.I)
_MUTATION = re.compile(r"update|cancel|book|create|delete|send|transfer|add|remove|set_|post|submit|merge|push|commit|"
                       r"deploy|refund|pay|modify|insert", re.I)
_NOTE_KEYS = ("_i", "description", "explanation", "reason")
_STATUS_SECTION = {"completed": "### Done", "done": "### Done", "in_progress": "### In Progress",
                   "blocked": "### Blocked"}
MAX_REPORTED = 40    # the newest lines of what the agent reported, at least ...
REPORT_TOKENS = 40   # ... and one per this many tokens of the summary's budget
MAX_REASONS = 12     # the reasons the agent gave (a quarter of the reported lines, at least this many)
MAX_RESULTS, RESULT_TOKENS = 12, 120     # what commands printed: at least this many lines, one per tokens
MAX_RESULT_LINES, MAX_RESULT_CHARS = 3, 200   # an output this short is quoted as the command's result
# a finding that gives a reason: why something failed, changed or was done
_REASON = re.compile(r"\b(?:because|since|caused by|due to|the (?:root )?cause|the reason|the (?:fix|issue|problem) "
                     r"(?:is|was)|fixed by|turned out|turns out|so that|which (?:means|is why)|that's why)\b", re.I)
MAX_PROGRAMS = 8     # programs whose last run is named
MAX_LISTED = 6       # items of the next steps the agent last listed


def clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    text = normalize(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def note(args: dict) -> str | None:
    """What a tool call says it is for (pi's `_i`, a `description`...), when it says."""
    return next((args[k] for k in _NOTE_KEYS if isinstance(args.get(k), str) and args[k].strip()), None)


def _alone(sentence: str) -> str:
    """Without the closing bracket of an aside that began in the sentence before it."""
    if sentence.endswith(")") and sentence.count(")") > sentence.count("("):
        return sentence[:-1].rstrip()
    return sentence


def add_decisions(said: list[tuple[int, str]], c: Collector) -> None:
    """The choices the agent stated with what they replace or why."""
    for i, text in said:
        for s in map(plain, sentences(text)):
            if is_decision(s):
                line = as_task(s) or as_statement(s)
                if not is_talk(line):
                    c.add("## Key Decisions", "- " + clip(_alone(line)), USEFUL, i)


def add_task_lists(lists: list[TaskList], c: Collector) -> None:
    """The latest list says where each item stands; items completed in older lists stay done."""
    if not lists:
        return
    latest = lists[-1]
    named = {t.text for t in latest.tasks}
    done = {t.text for tl in lists for t in tl.tasks if t.status in ("completed", "done")}
    said = [_words(t.text) for t in latest.tasks]     # the latest list's items, then the ones said left open
    for older in lists[:-1]:
        for task in older.tasks:
            if task.text in named:
                continue
            if task.status in ("completed", "done"):
                named.add(task.text)
                c.add("### Done", "- " + clip(task.text), USEFUL, older.index)
            elif task.text not in done and not any(_same_task(_words(task.text), w) for w in said):
                # an item a newer list dropped without doing it: still owed, unless the newer list reworded it
                said.append(_words(task.text))
                c.add("## Next Steps", "- Left open in an earlier plan: " + clip(task.text), RECENT, older.index)
    for task in latest.tasks:
        section = _STATUS_SECTION.get(task.status, "## Next Steps")
        rank = {"### Done": USEFUL, "### In Progress": ARTIFACT}.get(section, KEY)   # the task under way stays longest
        c.add(section, "- " + clip(task.text), rank, latest.index)


_WORD = re.compile(r"[a-z0-9_]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _same_task(words: set[str], other: set[str]) -> bool:
    """Whether two task texts share most of their words (a task reworded in a newer list)."""
    return bool(words) and len(words & other) >= 0.6 * min(len(words), len(other) or 1)


def add_outcomes(messages: list[dict], start: int, end: int, c: Collector) -> None:
    for outcome in outcomes(messages, start, end):
        rank = {"push": USEFUL, "commit": ARTIFACT}.get(outcome.kind, KEY)     # a commit's hash is kept longest
        c.add("### Done", "- " + clip(outcome.text), rank, outcome.index)
    for i in range(start, end):
        if role(messages[i]) == "assistant":
            for call, result, _ in paired_results(messages, i):
                _action_call(call, result, c, i)


def add_commands(messages: list[dict], start: int, end: int, c: Collector) -> None:
    """The last run of each program (MAX_PROGRAMS newest), with how it ended and how often it ran: what to
    run again, in context, never as something done."""
    runs: dict[str, tuple[str, str, int, int]] = {}       # program -> (last command, status, runs, position)
    for i in range(start, end):
        if role(messages[i]) != "assistant" or not tool_calls(messages[i]):
            continue
        for call, result, _ in paired_results(messages, i):
            command = shell_command(call)
            key = command_key(command) if command else ""
            if not key or result is None:
                continue
            status = "failed" if error_lines(message_text(result)) else "ok"
            count = runs.pop(key, ("", "", 0, 0))[2] + 1      # re-inserted: the order is that of the last run
            runs[key] = (command, status, count, i)
    for key, (command, status, count, i) in list(runs.items())[-MAX_PROGRAMS:]:
        times = f", {count} runs" if count > 1 else ""
        c.add("## Critical Context", f"- Last run of {key}: `{clip(command, 120)}` ({status}{times})", RECENT, i)


def _action_call(call: dict, result: dict | None, c: Collector, order: int) -> None:
    """A tool call that changed something outside the files (a booking, a message sent), with its outcome."""
    name = str((call.get("function") or {}).get("name") or "tool")
    args = call_arguments(call)
    if shell_command(call) is not None or name == "think" or file_actions(call, result) \
            or any(k in args for k in PLAN_KEYS) or not _MUTATION.search(name):
        return
    status = "no result" if result is None else "failed" if error_lines(message_text(result)) else "ok"
    said = note(args)
    if said:
        c.add("### Done", f"- {name}: {clip(said, 120)} -> {status}", RECENT, order)
        return
    subject = ", ".join(f"{k}={v}" for k, v in args.items() if isinstance(v, (str, int, float)) and len(str(v)) < 60)
    c.add("### Done", f"- {name}({clip(subject, 120)}) -> {status}", RECENT, order)


# a sentence that exclaims to the user ("... the issues you identified! 🎉"): telling, not what was found
_TO_THE_USER = re.compile(r"\byou(?:r)?\b(?:[^.!?]|\.\w)*!", re.I)


def _report_lines(text: str) -> list[str]:
    """The sentences of an agent's message that state something particular: no talk, no guesses, no
    questions, no plans, no code, no headings or table rows, nothing exclaimed to the user."""
    out = []
    for s in sentences(text):
        s = as_statement(plain(s))
        if len(s.split()) < 4 or s.startswith(("#", "|")) or s.endswith(":") or not has_specifics(s) \
                or is_talk(s) or is_speculation(s) or is_code_fragment(s) or as_task(s) \
                or _TO_THE_USER.search(s):
            continue
        out.append(clip(_alone(s), 240))
    return out


def _closes_turn(messages: list[dict], i: int, end: int) -> bool:
    """Whether the agent's message at i ends its turn: words without calls, the user's turn or the end next."""
    return not tool_calls(messages[i]) and (i + 1 >= end or role(messages[i + 1]) == "user")


def add_reports(messages: list[dict], said: list[tuple[int, str]], end: int, c: Collector,
                budget_tokens: int = 0) -> None:
    """What the agent reported: finished work to Done, its findings (a turn's closing message first) and the
    reasons it gave to context and decisions; as many as the budget has room for, the newest first out of it
    last (a long middle's summary keeps more of them)."""
    found, reasons = [], []
    for i, text in said:
        closing = _closes_turn(messages, i, end)
        for line in _report_lines(text):
            if _COMPLETED.search(line):
                found.append(("### Done", line, RECENT, i))
            elif _REASON.search(line):
                reasons.append(("## Key Decisions", line, RECENT if closing else CHATTER, i))
            else:
                found.append(("## Critical Context", line, RECENT if closing else CHATTER, i))
    limit = max(MAX_REPORTED, budget_tokens // REPORT_TOKENS)
    for section, line, rank, i in found[-limit:] + reasons[-max(MAX_REASONS, limit // 4):]:
        c.add(section, "- " + line, rank, i)


def add_command_results(messages: list[dict], start: int, end: int, c: Collector, budget_tokens: int = 0) -> None:
    """What commands printed that later turns stand on: each short output that states a number or a name (a
    version, a count, a state), the command beside it; the newest first kept."""
    seen, found = set(), []
    for i in range(start, end):
        if role(messages[i]) != "assistant" or not tool_calls(messages[i]):
            continue
        for call, result, _ in paired_results(messages, i):
            command = shell_command(call)
            if not command or result is None or error_lines(message_text(result)):
                continue
            line = _result_line(message_text(result))
            if line and (command_key(command), line) not in seen:
                seen.add((command_key(command), line))
                found.append((i, f"- `{clip(command, 100)}` printed: {clip(line, 160)}"))
    for i, line in found[-max(MAX_RESULTS, budget_tokens // RESULT_TOKENS):]:
        c.add("## Critical Context", line, CHATTER, i)


# the line of a long output that totals it: a diff's or commit's stat, a test run's counts
_TOTALS = re.compile(r"^\W*(?:\d+ files? changed\b|(?:=+ )?\d+ (?:passed|failed)\b|Ran \d+ tests?\b|test result:|"
                     r"Tests?:\s+\d+|\d+ (?:tests?|examples?|specs?), \d+ failures?)", re.I)


def _result_line(output: str) -> str | None:
    """A short output that says something particular (a version, a count, a state): its lines, joined. A long
    one is the summary's material elsewhere (its errors, its identifiers), not a result to quote, except for
    the line that totals it (53 files changed, 358 insertions(+), ...)."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    text = " | ".join(lines)
    if len(lines) > MAX_RESULT_LINES or len(text) > MAX_RESULT_CHARS:
        totals = [line for line in lines[-5:] if len(line) <= MAX_RESULT_CHARS and _TOTALS.match(line)]
        return totals[-1] if totals else None
    return text if lines and has_specifics(text) else None


_NEXT_LABEL = re.compile(r"^[#*\s]*[^\n]{0,30}\b(?:next|remaining|to ?do|pending|follow[- ]?ups?|priorities)\b[^\n]{0,30}$",
                         re.I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+(.+)$")


def listed_next(text: str) -> list[str]:
    """The items an agent listed under a "Next steps" / "Remaining" / "TODO" label in a message."""
    items, listing = [], False
    for line in text.splitlines():
        label = line.lstrip().startswith("#") or "**" in line or line.rstrip().endswith((":", "："))
        if label and len(line) <= 70 and _NEXT_LABEL.match(line) and not _LIST_ITEM.match(line):
            listing, items = True, []          # the last such list of the message counts
            continue
        item = _LIST_ITEM.match(line)
        if listing and item:
            items.append(plain(item.group(1)))
        elif listing and line.strip():
            listing = False
    return [i for i in items if len(i.split()) >= 2 and not is_talk(i)]


def add_listed_next(messages: list[dict], said: list[tuple[int, str]], end: int, lists: list[TaskList],
                    c: Collector) -> None:
    """The next steps the agent listed in its last report to the user (the message that ended its last
    turn), unless a newer task list says what is next."""
    closing = [(i, text) for i, text in said if _closes_turn(messages, i, end)]
    if not closing or (lists and lists[-1].index > closing[-1][0]):
        return
    i, text = closing[-1]
    for item in listed_next(text)[:MAX_LISTED]:
        c.add("## Next Steps", "- " + clip(item), KEY, i)


def add_state_at_cut(messages: list[dict], start: int, end: int, said: list[tuple[int, str]],
                     lists: list[TaskList], probes, latest_request: tuple[int, str] | None, c: Collector) -> None:
    """What was under way when the middle ends, and what comes next."""
    plan = last_plan(messages, said, end)
    if plan is not None:
        if plan.under_way:     # what the agent was doing: kept like the newest artifacts when the budget is short
            c.add("### In Progress", "- " + clip(plan.under_way), ARTIFACT, plan.index)
        for task in plan.next:
            c.add("## Next Steps", "- " + clip(task), KEY, plan.index)
    open_errors = [e for e in probes.errors if not e.fixed]
    if open_errors:
        last = open_errors[-1]
        c.add("## Next Steps", f"- Fix what still fails ({command_key(last.command) or 'command'}): "
              + clip(last.text, 160), KEY, end)
    if latest_request is not None:
        asked_at, request = latest_request
        closed = any(i > asked_at and _closes_turn(messages, i, end) for i, _ in said)
        acted = any(role(m) == "assistant" for m in messages[asked_at + 1:end])
        if not closed and acted:
            c.add("### In Progress", "- The latest request, under way: " + clip(request, 100), USEFUL, end)
        elif not closed:
            c.add("## Next Steps", "- The latest request, not started: " + clip(request, 100), USEFUL, end)


def add_progress(messages: list[dict], start: int, end: int, probes, lists: list[TaskList],
                 latest_request: tuple[int, str] | None, c: Collector, budget_tokens: int = 0) -> list[tuple[int, str]]:
    """Every part of the state; returns the agent's statements (the summarizer reuses them)."""
    said = statements(messages, start, end)
    add_task_lists(lists, c)
    add_outcomes(messages, start, end, c)
    add_commands(messages, start, end, c)
    add_reports(messages, said, end, c, budget_tokens)
    add_command_results(messages, start, end, c, budget_tokens)
    add_decisions(said, c)
    add_state_at_cut(messages, start, end, said, lists, probes, latest_request, c)
    add_listed_next(messages, said, end, lists, c)
    if probes.files_written:
        c.add("### Done", f"- Changed {len(probes.files_written)} file(s), listed under Relevant Files.", KEY, end)
    return said
