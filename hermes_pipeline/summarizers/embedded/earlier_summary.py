"""An earlier summary, in any layout, read back into the sections of ours, and carried into the new one.

The input may already hold a summary: ours, Claude Code's (`isCompactSummary`:
"Summary:" then numbered parts, "1. Primary Request and Intent:" ... "9.
Optional Next Step:"), pi's (Markdown `## Goal`, `## Progress`, `### Done`...,
then its own file lists), Hermes' (`## Active Task`, `## Completed Actions`,
`## Active State`, `## Remaining Work`...). Each heading is mapped to one of our
sections by what it names; lines before the first heading, Claude Code's
"Analysis:" scratchpad, and wrapper lines are left out; a code block becomes
the list of names it shows. The new summary then updates these lines instead
of stacking a second summary on the first (carry_previous).
"""
from __future__ import annotations

import re

from hermes_pipeline.analysis.code_names import names_in
from hermes_pipeline.analysis.earlier_trail import read_trail
from hermes_pipeline.analysis.speech import as_task, is_talk
from hermes_pipeline.analysis.tool_output import normalize
from hermes_pipeline.summarizers.base import SECTIONS
from hermes_pipeline.summarizers.embedded.sections import HINTS_LABEL, KEY, RECENT, USEFUL, USER_WORDS, Collector

# (what a heading names, our section), tried in order: "Pending Tasks" is a next step before it is a task
_HEADING_SECTIONS = (
    (r"constraint|preference|rule", "## Constraints & Preferences"),
    (r"in[ -]progress|current work|active state|early progress|currently", "### In Progress"),
    (r"next|pending|remaining|to ?do|follow[ -]?up|open (?:items|questions)", "## Next Steps"),
    (r"blocked|blocker|open (?:errors|issues)", "### Blocked"),
    (r"decision|resolved question|approach", "## Key Decisions"),
    (r"done|complete|accomplish|problem solving|progress|actions|changes made", "### Done"),
    (r"user messages|request|intent|goal|task|objective|purpose", "## Goal"),
    (r"file", "## Relevant Files"),
)
_MARKDOWN_HEADING = re.compile(r"^#{1,4}\s+(.+?)\s*:?\s*$")
_NUMBERED_HEADING = re.compile(r"^\d{1,2}\.\s+([A-Z][\w &/,()'-]{2,60}):\s*$")
_BOLD_HEADING = re.compile(r"^\*\*([^*]{3,60}?):?\*\*:?\s*$")
_TAG_LINE = re.compile(r"^<(/?)([\w-]+)>$")
_FILE_LISTS = {"read-files": "read earlier", "modified-files": "changed earlier"}   # pi's own lists
_WRAPPER = re.compile(r"^(?:This session is being continued from a previous conversation|Please continue the "
                      r"conversation from where we left|\[CONTEXT (?:COMPACTION|SUMMARY)|\[End of context summary)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
# an entry of pi's file lists is a path: not its "… (34 more files omitted)" marker, not a read's line range
_OMITTED = re.compile(r"^(?:…|\.\.\.)|\(\d+ more files? omitted\)")
_LINE_RANGE = re.compile(r":\d+(?:-\d+)?$")
MAX_LINE_CHARS = 400
_LABEL_ONLY = re.compile(r"^(?:\*\*[^*]{1,60}\*\*:?|[A-Z][\w ]{0,40}:)\s*$")  # "**Code change**:", a bare label


def section_of(heading: str) -> str:
    """Our section for a heading of another layout (Critical Context when nothing fits)."""
    lowered = heading.lower()
    for pattern, section in _HEADING_SECTIONS:
        if re.search(pattern, lowered):
            return section
    return "## Critical Context"


def _heading(line: str) -> str | None:
    for pattern in (_MARKDOWN_HEADING, _NUMBERED_HEADING, _BOLD_HEADING):
        found = pattern.match(line.strip())
        if found:
            return found.group(1)
    return None


def read_sections(summary: str) -> list[tuple[str, str, str]]:
    """(our section, bullet text without its list mark, the heading it was under) for each line of an
    earlier summary."""
    out: list[tuple[str, str, str]] = []
    heading = ""
    section, code, in_analysis, listing, preamble = None, [], False, None, []
    parent: tuple[int, int] | None = None      # indentation of the last top-level item
    # pi joins its file lists with a literal "\n", and closes one list and opens the next on one line
    summary = re.sub(r"(</[\w-]+>)(<[\w-]+>)", r"\1\n\2", summary.replace("\\n/", "\n/"))
    lines = summary.split("\n")
    for raw in lines:
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith("```"):
            if code:    # the block ends: the names it shows, not its code
                names = names_in("\n".join(code[1:]))
                if names and section:
                    out.append((section, "Code shown: " + ", ".join(names[:24]), heading))
                code = []
            else:
                code = [stripped]
            continue
        if code:
            code.append(line)
            continue
        if stripped in ("Analysis:", "<analysis>"):
            in_analysis = True
            continue
        if stripped in ("Summary:", "</analysis>", "<summary>"):
            in_analysis = False
            continue
        tag = _TAG_LINE.match(stripped)
        if tag:
            listing = None if tag.group(1) else _FILE_LISTS.get(tag.group(2))
            continue
        if listing:
            for entry in re.split(r"\\n|\n", stripped):     # pi joins entries with a literal "\n"
                item = ("## Relevant Files", f"{_LINE_RANGE.sub('', entry.strip())} ({listing})", listing)
                if not item[1].startswith(" (") and not _OMITTED.search(entry.strip()) and item not in out:
                    out.append(item)
            continue
        if in_analysis or not stripped or _WRAPPER.match(stripped) or stripped == "---":
            continue
        found = _heading(stripped)
        if found is not None:
            heading = found.strip()
            section = "## Progress" if heading.lower() == "progress" else section_of(heading)
            parent = None
            continue
        if section is None:
            preamble.append(stripped)
            continue
        if section == "## Progress":
            continue
        text = _LIST_MARK.sub("", stripped).strip()
        if _LABEL_ONLY.match(text):
            parent = None   # a bare label ("**Code change**:") says nothing: what it introduces stands alone
            continue
        if not text or text.lower().rstrip(".") in ("none", "(none)", "n/a", "nothing"):
            continue
        indent = len(line) - len(line.lstrip())
        if parent is not None and indent > parent[0] and out and out[-1][0] == section \
                and len(out[-1][1]) + len(text) < MAX_LINE_CHARS:
            joined = f"{out[-1][1].rstrip(':')}: {text}" if out[-1][1].endswith(":") else f"{out[-1][1]}; {text}"
            out[-1] = (section, joined, heading)      # a nested item joins the item it belongs to
            continue
        parent = (indent, len(out))
        out.append((section, text[:MAX_LINE_CHARS], heading))
    if not out:      # prose without headings (Hermes' trajectory summaries): carried as context
        out = [("## Critical Context", _LIST_MARK.sub("", line)[:MAX_LINE_CHARS], "") for line in preamble]
    return out


# -- carried into the new summary ------------------------------------------------

_REWRITTEN = re.compile(r"- (?:\(earlier\) )?(?:Changed \d+ file\(s\), listed under Relevant Files\.|"
                        r"Fix the errors listed under Blocked\.|Fix what still fails \(.*|"
                        r"The latest request, (?:under way|not started): .*|Last run of .*)$")
DONE_ITEM_CHARS = 160       # a task-list item, a commit: what an earlier summary says was done, kept long
_CARRIED_RANK = {"## Goal": KEY, "## Constraints & Preferences": KEY, "## Key Decisions": USEFUL,
                 "## Relevant Files": USEFUL, "## Critical Context": RECENT, "### Done": RECENT,
                 "### Blocked": RECENT, "### In Progress": USEFUL, "## Next Steps": USEFUL}
_PLANS = ("### In Progress", "## Next Steps")
_LISTED = ("read earlier", "changed earlier")     # pi's file lists, as read_sections reads them




# what an earlier summary said of the state of the whole work: superseded by the middle after it, which
# goes on with the work ("All requested tasks have been completed", "No next step needed")
_STATE_CLAIM = re.compile(r"^(?:(?:all|every)\b.{0,60}\b(?:complete[d]?|done|finished|resolved|implemented)\b|"
                          r"(?:no|nothing)\b.{0,40}\b(?:next steps?|further|remaining|left|pending|needed|to do)\b|"
                          r"(?:the )?(?:task|work|request) (?:is|was|has been) (?:complete[d]?|done|finished)\b)",
                          re.I)


def stale(text: str) -> bool:
    """A line of an earlier summary that says nothing the new summary can carry."""
    plain_text = re.sub(r"^\(earlier\)\s*", "", text).strip()
    return bool(_STATE_CLAIM.match(plain_text) or _LABEL_ONLY.match(plain_text))


def carry_previous(previous: str, c: Collector, probes, new_plan: bool, done_tasks: set[str],
                   new_request: bool) -> bool:
    """Lines of an earlier summary keep their section and go first (they are older); returns whether it
    stated a goal.

    Its files and errors, in our layout, are written again from the probes (which hold them). Its plans
    (In Progress, Next Steps) are marked `(earlier)`; the middle's own task list replaces them, an item it
    completed moves to Done. A "Latest request" of ours becomes an earlier one. What it said of the state of
    the whole work ("all tasks completed", "no next step") and bare labels are left: the middle goes on.
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
        if stale(text) and section != "## Goal":
            continue     # its word on the state of the whole work: the middle after it says where it stands
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
