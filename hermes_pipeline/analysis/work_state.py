"""The state of the work a log proves: task lists, commits, pull requests, green test runs, the last plan.

Shared by the quality probes (analysis/probes.py: what a summary must say about the
state) and the embedded summarizer (which writes it). Read from the tool calls
and their results only, never from what the agent claims, except the plan the
agent last stated, which is its own words by nature. Pure functions, linear.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from hermes_pipeline.analysis.artifacts import (
    call_arguments,
    command_key,
    command_programs,
    paired_results,
    shell_command,
)
from hermes_pipeline.analysis.redact import strip_think
from hermes_pipeline.analysis.speech import as_task, is_decision, plain, says_little, sentences
from hermes_pipeline.analysis.tool_output import error_lines, normalize
from hermes_pipeline.transcript import message_text, role, tool_calls

PLAN_KEYS = ("todos", "plan", "tasks")
OPEN_STATUSES = ("in_progress", "pending", "todo", "blocked", "not_started", "open")
_COMMIT_LINE = re.compile(r"^\[([\w./+-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_GH_OUTCOME = re.compile(r"^\s*✓\s+(.{8,200})$", re.M)          # gh prints what it did after a check mark
_PR_URL = re.compile(r"(https://github\.com/[\w.-]+/[\w.-]+/(pull|issues)/(\d+))")
_PUSHED = re.compile(r"^\s*(?:\*\s\[new branch\]|[0-9a-f]{7,}\.\.[0-9a-f]{7,})\s+\S+\s+->\s+(\S+)", re.M)
# a line that counts tests and says they passed
_GREEN = re.compile(
    r"^.*(?:\b\d+ passed\b|\b100% tests passed\b|\btest result: ok\b|^OK \(\d+ tests?\)|\bAll \d+ tests? passed|"
    r"\bTests?:\s+\d+ passed|\b\d+/\d+ (?:tests? )?passed|\bRan \d+ tests?\b|\b\d+ tests? passed|\bPASS(?:ED)?: \d+).*$",
    re.M | re.I)
_FAILED_COUNT = re.compile(r"\b[1-9]\d* (?:failed|errors?|failures?)\b", re.I)
TEST_PROGRAMS = re.compile(r"test|pytest|ctest|jest|vitest|mocha|spec|check|tox|nox", re.I)
_INTENT = re.compile(r"\b(?:next|let me|let's|i'll|i will|i'm going to|need to|going to|then i|todo|remaining|"
                     r"will now|plan)\b", re.I)
LOOK_BACK = 6        # statements searched back for the plan the agent last stated
MAX_NEXT = 3         # tasks of that plan kept as next steps


@dataclass
class Task:
    text: str
    status: str        # normalized: completed, in_progress, pending...


@dataclass
class TaskList:
    tasks: list[Task]
    index: int          # the message that wrote it

    @property
    def open(self) -> list[Task]:
        return [t for t in self.tasks if t.status in OPEN_STATUSES]


@dataclass
class Outcome:
    kind: str          # "commit", "pull request", "push", "gh", "tests"
    text: str          # what to say about it
    key: str           # what must be named for it to count as said (a hash, a URL, a line)
    index: int


def _task_text(item: dict) -> str:
    value = item.get("content") or item.get("step") or item.get("title") or item.get("task") or ""
    return normalize(str(value))


def task_lists(messages: list[dict], start: int, end: int) -> list[TaskList]:
    """Every task list (TodoWrite, update_plan...) the agent wrote in messages[start:end], in order."""
    found = []
    for i in range(start, min(end, len(messages))):
        if role(messages[i]) != "assistant":
            continue
        for call in tool_calls(messages[i]):
            args = call_arguments(call)
            items = next((args[k] for k in PLAN_KEYS if isinstance(args.get(k), list)), None)
            if items and all(isinstance(item, dict) and "status" in item for item in items):
                tasks = [Task(_task_text(item), str(item.get("status")).lower().replace("-", "_"))
                         for item in items]
                found.append(TaskList([t for t in tasks if t.text], i))
    return found


def _result_outcomes(command: str, output: str, index: int) -> list[Outcome]:
    out = []
    programs = {program for program, _ in command_programs(command)}
    if "git" in programs and "commit" in command:
        for branch, sha, subject in _COMMIT_LINE.findall(output):
            out.append(Outcome("commit", f"Committed {sha} on {branch}: {normalize(subject)[:160]}", sha, index))
    if "gh" in programs:
        for line in _GH_OUTCOME.findall(output):
            out.append(Outcome("gh", normalize(line), normalize(line)[:80], index))
        for url, kind, number in dict.fromkeys(_PR_URL.findall(output)):
            what = "pull request" if kind == "pull" else "issue"
            out.append(Outcome(what, f"Opened {what} #{number}: {url}", url, index))
    if "git" in programs and "push" in command:
        for branch in dict.fromkeys(_PUSHED.findall(output)):
            out.append(Outcome("push", f"Pushed {branch}", branch, index))
    return out


def _telling(command: str | None, commits_only: bool) -> bool:
    """Whether a command's output can tell an outcome (a commit; a push, a pull request, a test run)."""
    if command is None:
        return False
    if commits_only:
        return "commit" in command
    return "git" in command or "gh " in command or bool(TEST_PROGRAMS.search(command))


def outcomes(messages: list[dict], start: int, end: int, commits_only: bool = False) -> list[Outcome]:
    """Commits, pull requests, pushes, and the last green run of each test program in messages[start:end]
    (a later failing run of the same program takes the green one back); only commits with `commits_only`."""
    found: list[Outcome] = []
    tests: dict[str, Outcome | None] = {}
    for i in range(start, min(end, len(messages))):
        if role(messages[i]) != "assistant" or not tool_calls(messages[i]) \
                or not any(_telling(shell_command(call), commits_only) for call in tool_calls(messages[i])):
            continue       # no call here can tell one: its results are not read
        for call, result, result_index in paired_results(messages, i):
            command = shell_command(call)
            if command is None or result is None:
                continue
            output = message_text(result)
            found += _result_outcomes(command, output, i)
            key = command_key(command)
            if commits_only or not TEST_PROGRAMS.search(key or command.split(" ", 1)[0]):
                continue
            if error_lines(output) or _FAILED_COUNT.search(output):
                tests[key] = None
                continue
            green = _last_green(output)
            if green is not None:
                line = normalize(green)[:200]
                tests.pop(key, None)        # re-inserted: the order is that of the last run
                tests[key] = Outcome("tests", f"Tests pass ({key or 'tests'}): {line}", line, i)
    return sorted(found + [o for o in tests.values() if o is not None], key=lambda o: o.index)


def _last_green(output: str) -> str | None:
    """The last line _GREEN matches (it matches whole lines): looked for from the end, where a test run
    prints its count, not in every line of a long log."""
    for line in reversed(output.split("\n")):
        if _GREEN.fullmatch(line):
            return line
    return None


def statements(messages: list[dict], start: int, end: int) -> list[tuple[int, str]]:
    """The agent's words in messages[start:end]: its texts and `think` thoughts, with their positions."""
    out = []
    for i in range(start, min(end, len(messages))):
        if role(messages[i]) != "assistant":
            continue
        texts = [strip_think(message_text(messages[i]))]
        texts += [str(call_arguments(t).get("thought") or "") for t in tool_calls(messages[i])
                  if (t.get("function") or {}).get("name") == "think"]
        text = "\n".join(t for t in texts if t.strip())
        if text:
            out.append((i, text))
    return out


@dataclass
class Plan:
    index: int               # the statement that said it
    under_way: str | None    # the task its calls (or the agent's next message) took up
    next: list[str]          # what it said comes after


def last_plan(messages: list[dict], said: list[tuple[int, str]], end: int) -> Plan | None:
    """The plan the agent last stated (among its last LOOK_BACK statements): the intentions of that
    statement, as tasks; the first is under way when the agent acted on it before the end."""
    for i, text in reversed(said[-LOOK_BACK:]):
        tasks = [task for task in (as_task(plain(s)) for s in sentences(text)
                                   if _INTENT.search(s) and not is_decision(plain(s))) if task]
        if not tasks:
            continue
        acted = bool(tool_calls(messages[i])) or (i + 1 < end and role(messages[i + 1]) == "assistant")
        # the plan is still this statement's, without a task that means nothing alone ("temporarily exclude it")
        tasks = [None if says_little(task, 2) else task for task in tasks]
        if acted:
            return Plan(i, tasks[0], [t for t in tasks[1:MAX_NEXT + 1] if t])
        return Plan(i, None, [t for t in tasks[:MAX_NEXT] if t])
    return None


def state_probes(messages: list[dict], start: int, end: int) -> tuple[list[str], list[str]]:
    """What a summary of messages[start:end] must say about the state: the open items of the latest task
    list (without one, the plan the agent last stated, as tasks), and the hashes of the commits made."""
    lists = task_lists(messages, start, end)
    if lists:
        tasks = [t.text for t in lists[-1].open]
    else:
        plan = last_plan(messages, statements(messages, start, end), end)
        tasks = ([plan.under_way] if plan and plan.under_way else []) + (plan.next if plan else [])
    commits = [o.key for o in outcomes(messages, start, end, commits_only=True) if o.kind == "commit"]
    return tasks, list(dict.fromkeys(commits))
