"""A guard for model-written summaries: add the files, errors, open tasks and commits the model left out.

`artifact_trail_patch` checks a summary against the probes of the middle it
replaced (hermes_pipeline.analysis.probes) and appends a short `## Artifact Trail`
section naming the changed files, the error lines, the open task-list items
(or the plan last stated) and the commits the summary does not name, within the
summary's token budget. Deterministic and model-free: the same summary and
probes give the same bytes. Open errors and open tasks go in first, then files
changed last before older ones, commits, fixed errors, when not everything fits.
"""
from __future__ import annotations

from hermes_pipeline.analysis.probes import Probes
from hermes_pipeline.analysis.score import Haystack
from hermes_pipeline.analysis.tool_output import normalize
from hermes_pipeline.summarizers.embedded.grouped_names import grouped_paths

HEADING = "## Artifact Trail"
INTRO = "Not named above, from the compacted turns:"
_ACTION = {"written": "created/written", "edited": "edited", "moved": "moved away", "deleted": "deleted"}


def _missed(summary_text: str, probes: Probes) -> tuple[list[str], list, list[str], list[str]]:
    hay = Haystack(normalize(summary_text))
    known = probes.known_paths | set(probes.files_written) | set(probes.files_read)
    files = [p for p in probes.files_written if not hay.names_path(p, known)]
    errors = [e for e in probes.errors if e.line not in hay.text]
    tasks = [t for t in probes.open_tasks if t not in hay.text]
    commits = [c for c in probes.commits if not hay.has_token(c)]
    return files, errors, tasks, commits


def _candidates(files: list[str], errors: list, tasks: list[str], commits: list[str],
                probes: Probes) -> list[tuple[str, int]]:
    """(line, how many missed items it names), most needed first: open errors, open tasks, changed files,
    commits, fixed errors."""
    out = []
    for error in errors:
        state = "fixed later" if error.fixed else "still failing"
        out.append((0 if not error.fixed else 2, -error.index, f"- Error ({state}): {error.text}", 1))
    for k, task in enumerate(tasks):
        out.append((0, k, f"- Open task: {task}", 1))
    if commits:
        out.append((1, 0, f"- Commits: {', '.join(commits)}", len(commits)))
    by_action: dict[str, list[str]] = {}
    for path in files:
        by_action.setdefault(probes.files_written[path][-1], []).append(path)
    for action, paths in by_action.items():
        for group, members in grouped_paths(paths):
            newest = max(probes.written_at.get(p, 0) for p in members)
            out.append((1, -newest, f"- {_ACTION.get(action, action).capitalize()}: {group}", len(members)))
    return [(line, n) for _, _, line, n in sorted(out)]


def artifact_trail_patch(summary_text: str, probes: Probes, budget_tokens: int, counter) -> tuple[str, dict]:
    """The summary with an Artifact Trail of what it missed, and what it missed.

    `missed` lists the changed files and error lines the summary did not name
    (`files_written`, `errors`) and, under `left_out`, how many of them did not
    fit the budget. A summary already at or over its budget is returned unchanged.
    """
    files, errors, tasks, commits = _missed(summary_text, probes)
    missed = {"files_written": files, "errors": [e.line for e in errors], "open_tasks": tasks, "commits": commits,
              "left_out": 0}
    if not files and not errors and not tasks and not commits:
        return summary_text, missed
    base = summary_text.rstrip()
    header = f"\n\n{HEADING}\n{INTRO}"
    spent = counter.count_text(base + header)
    chosen: list[tuple[str, int]] = []
    for line, n in _candidates(files, errors, tasks, commits, probes):
        cost = counter.count_text("\n" + line)
        if spent + cost <= budget_tokens:
            chosen.append((line, n))
            spent += cost
    render = lambda: base + header + "".join("\n" + line for line, _ in chosen) if chosen else summary_text
    while chosen and counter.count_text(render()) > budget_tokens:   # joined text may count a token more
        chosen.pop()
    missed["left_out"] = len(files) + len(errors) + len(tasks) + len(commits) - sum(n for _, n in chosen)
    return render(), missed
