"""An earlier summary, in any layout, read back into the sections of ours.

The input may already hold a summary: ours, Claude Code's (`isCompactSummary`:
"Summary:" then numbered parts, "1. Primary Request and Intent:" ... "9.
Optional Next Step:"), pi's (Markdown `## Goal`, `## Progress`, `### Done`...,
then its own file lists), Hermes' (`## Active Task`, `## Completed Actions`,
`## Active State`, `## Remaining Work`...). Each heading is mapped to one of our
sections by what it names; lines before the first heading, Claude Code's
"Analysis:" scratchpad, and wrapper lines are left out; a code block becomes
the list of names it shows. The new summary then updates these lines instead
of stacking a second summary on the first.
"""
from __future__ import annotations

import re

from hermes_pipeline.summarizers.code_names import names_in

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
