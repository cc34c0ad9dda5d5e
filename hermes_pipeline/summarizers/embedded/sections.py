"""The embedded summary's sections: who fills each, its lines' importance, and fitting them into the budget.

Every section comes from what the log proves, in the user's and the agent's own words:
- Goal, Constraints & Preferences, the user's answers under Key Decisions: user_words.py;
- Done, In Progress, Next Steps, the agent's choices under Key Decisions, the state at the cut: progress.py;
- Relevant Files, Blocked (errors still failing), the errors fixed later in Critical Context:
  files_and_errors.py; the identifiers and amounts of tool results and the names used most (lookup hints):
  summarizer.py;
- an earlier summary's lines, each under its own section: earlier_summary.py.
A `Collector` holds the lines; `fit` keeps the most important within the budget (a rank, then the newest
first within it; the user's words are shortened only as a last resort); `render` writes the sections in
order, leaving out those with nothing in them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from hermes_pipeline.summarizers.base import SECTIONS

# Ranks: lower is more important. The user's words are shortened only when nothing else is left to drop.
USER_WORDS, ARTIFACT, KEY, USEFUL, RECENT, CHATTER = 0, 1, 2, 3, 4, 5
SHORT_USER_CHARS = 200
PROGRESS_PARTS = ("### Done", "### In Progress", "### Blocked")
HINTS_LABEL = "Names used most: "     # the lookup hints' line (an earlier summary's are merged)
ARTIFACT_SHARE = 0.25     # of a summary's budget, kept for the newest artifact lines before the user's words


@dataclass
class Line:
    section: str
    text: str
    rank: int
    order: int          # position in the conversation; older lines go first within a rank
    form: str = ""      # "full" or "compact" for the two renderings of the file list


@dataclass
class Collector:
    lines: list[Line] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    hints: list[str] = field(default_factory=list)      # lookup names an earlier summary gave

    def add(self, section: str, text: str, rank: int, order: int, form: str = "") -> None:
        key = (section, text)
        if text and key not in self.seen:
            self.seen.add(key)
            self.lines.append(Line(section, text, rank, order, form))


def render(lines: list[Line]) -> str:
    """The sections that have lines, in template order; a section with nothing in it is left out (Progress
    heads its subsections when one of them has lines)."""
    by_section: dict[str, list[Line]] = {s: [] for s in SECTIONS}
    for line in lines:
        by_section[line.section].append(line)
    out = []
    for section in SECTIONS:
        if section == "## Progress":
            if any(by_section[s] for s in PROGRESS_PARTS):
                out.append(section)
            continue
        chosen = sorted(by_section[section], key=lambda line: line.order)
        if chosen:
            out += [section, *(line.text for line in chosen), ""]
    return "\n".join(out).strip()


def _shorten(text: str) -> str:
    """The start of a line; never an opened key block without its end (redaction would take the rest)."""
    short = text[:SHORT_USER_CHARS - 1]
    opened = short.find("-----BEGIN")
    if opened >= 0 and "-----END" not in short[opened:]:
        short = short[:opened]
    return short.rstrip() + "…"


def fit(lines: list[Line], budget: int, counter) -> list[Line]:
    """The lines that fit the budget: least important first out, oldest first within a rank,
    then the most important of those out that still fit go back in.

    The user's words go last, with one exception: the newest artifact lines (files
    changed, errors) keep up to ARTIFACT_SHARE of the budget, so many user turns
    in a small budget never crowd out the whole artifact trail. Costs are counted
    per line (linear); the rendered text is counted at the end and trimmed further
    in the rare case that joining lines cost more.
    """
    present = {line.section for line in lines} | ({"## Progress"} if any(
        line.section in PROGRESS_PARTS for line in lines) else set())
    headings = counter.count_text("\n".join(s for s in SECTIONS if s in present))   # empty sections are left out
    costs = [counter.count_text(line.text) + 1 for line in lines]
    total = headings + sum(costs)
    keep = [True] * len(lines)
    dropped = []
    reserve = ARTIFACT_SHARE * budget
    artifacts = sum(cost for line, cost in zip(lines, costs) if line.rank == ARTIFACT)
    for index in sorted(range(len(lines)), key=lambda i: (-lines[i].rank, lines[i].order)):
        if total <= budget or lines[index].rank == USER_WORDS:
            break
        if lines[index].rank == ARTIFACT and artifacts <= reserve:
            break        # the newest artifacts keep their room: the user's words give way first
        keep[index] = False
        total -= costs[index]
        dropped.append(index)
        if lines[index].rank == ARTIFACT:
            artifacts -= costs[index]
    for index in reversed(dropped):   # room left by a long line dropped last: the next shorter ones may fit
        if total + costs[index] <= budget:
            keep[index] = True
            total += costs[index]
    kept = [line for line, k in zip(lines, keep) if k]
    if total > budget:   # the user's words are over: shorten them, oldest first, then drop
        for index in sorted(range(len(kept)), key=lambda i: kept[i].order):
            line = kept[index]
            if total <= budget:
                break
            if line.rank == USER_WORDS and len(line.text) > SHORT_USER_CHARS:
                kept[index] = replace(line, text=_shorten(line.text))   # callers' lines stay as they were
                total -= counter.count_text(line.text) - counter.count_text(kept[index].text)
        # then out, oldest first: the user's words (the latest request last), the reserved artifacts, the rest
        for line in sorted(kept, key=lambda line: (line.rank != USER_WORDS, line.rank, line.order)):
            if total <= budget:
                break
            kept.remove(line)
            total -= counter.count_text(line.text) + 1
    while kept and counter.count_text(render(kept)) > budget:
        worst = max(range(len(kept)), key=lambda i: (kept[i].rank, -kept[i].order))
        kept.pop(worst)
    return kept
