"""What an earlier summary of ours carries: its changed files and its errors, read back.

On a re-compaction the earlier summary is part of the removed middle. The files
it lists as changed and the errors it quotes are as much the middle's artifact
trail as the messages after it, so they become probes too (probes.py) and the
embedded summarizer writes them again from those probes instead of copying the
old lines. Only our own layout is read (the lines summarizers/embedded/ and
summarizers/llm/artifact_trail.py write); another tool's summary is carried as text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from hermes_pipeline.analysis.artifacts import expand_braces
from hermes_pipeline.analysis.tool_output import error_probe_text

_ACTIONS = "written|edited|moved|deleted"
_FULL = re.compile(rf"^- (\S(?:.*?\S)?) \(((?:{_ACTIONS})(?:, (?:{_ACTIONS}))*)\)(?:: .*)?$")   # ": why" after
_COMPACT = re.compile(r"^- (Created/written|Edited|Moved away|Deleted): (.+)$")
_COMPACT_ACTION = {"Created/written": "written", "Edited": "edited", "Moved away": "moved", "Deleted": "deleted"}
_READ = re.compile(r"^- (?:(\S(?:.*?\S)?) \(read\)|Read: (.+))$")
_ERROR = re.compile(r"^- (Still failing|Error, fixed later) \(([^)]*)\): (.+?)(?: \(\+\d+ alike\))?$")
_TRAIL_ERROR = re.compile(r"^- Error \((still failing|fixed later)\): (.+)$")     # summarizers/llm/artifact_trail.py's lines
FILE_SECTIONS = ("## Relevant Files", "## Artifact Trail")


@dataclass
class EarlierTrail:
    files: dict[str, list[str]] = field(default_factory=dict)        # path -> actions, in order
    errors: list[tuple[str, str, bool]] = field(default_factory=list)  # (program, line as quoted, fixed)
    lines: dict[str, list[str]] = field(default_factory=dict)  # summary line -> the paths or error probe texts it names
    # (files read are among these lines, not among `files`: a read is no change)


def _group_paths(group: str) -> list[str]:
    """The paths one rendered group names: `dir/{a,b}`, `a, b` or a single path."""
    if "{" in group:
        return expand_braces(group)
    return [p for p in group.split(", ") if p]


def read_trail(summary: str) -> EarlierTrail:
    """The changed files and the quoted errors of an earlier summary in our layout."""
    trail = EarlierTrail()
    section = None
    for raw in summary.split("\n"):     # not splitlines(): a quoted error line may hold a \r
        line = raw.strip()
        if line.startswith("#"):
            section = line
            continue
        in_files = section in FILE_SECTIONS
        if in_files and (found := _FULL.match(line)):
            path, actions = found.group(1), found.group(2).split(", ")
            trail.files[path] = actions
            trail.lines[line] = [path]
        elif in_files and (found := _COMPACT.match(line)):
            paths = _group_paths(found.group(2))
            for path in paths:
                trail.files.setdefault(path, [_COMPACT_ACTION[found.group(1)]])
            trail.lines[line] = paths
        elif in_files and (found := _READ.match(line)):    # no change, but named again when read again
            trail.lines[line] = _group_paths(found.group(1) or found.group(2))
        elif found := _ERROR.match(line):
            trail.errors.append((found.group(2), found.group(3), found.group(1) != "Still failing"))
            trail.lines[line] = [error_probe_text(found.group(3))]
        elif section == "## Artifact Trail" and (found := _TRAIL_ERROR.match(line)):
            trail.errors.append(("command", found.group(2), found.group(1) == "fixed later"))
            trail.lines[line] = [error_probe_text(found.group(2))]
    return trail
