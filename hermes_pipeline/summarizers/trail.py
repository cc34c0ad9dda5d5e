"""A guard for model-written summaries: add the files and errors the model left out.

`artifact_trail_patch` checks a summary against the probes of the middle it
replaced (hermes_pipeline.quality) and appends a short `## Artifact Trail`
section naming the changed files and the error lines the summary does not
name, within the summary's token budget. Deterministic and model-free: the
same summary and probes give the same bytes. Open errors go in before fixed
ones, and files changed last before older ones, when not everything fits.
"""
from __future__ import annotations

from hermes_pipeline.quality import Haystack, Probes
from hermes_pipeline.summarizers.forms import grouped_paths

HEADING = "## Artifact Trail"
INTRO = "Not named above, from the compacted turns:"
_ACTION = {"written": "created/written", "edited": "edited", "moved": "moved away", "deleted": "deleted"}


def _missed(summary_text: str, probes: Probes) -> tuple[list[str], list]:
    hay = Haystack(summary_text)
    known = probes.known_paths | set(probes.files_written) | set(probes.files_read)
    files = [p for p in probes.files_written if not hay.names_path(p, known)]
    errors = [e for e in probes.errors if e.line not in hay.text]
    return files, errors


def _candidates(files: list[str], errors: list, probes: Probes) -> list[tuple[str, int]]:
    """(line, how many missed items it names), most needed first: open errors, changed files, fixed errors."""
    out = []
    for error in errors:
        state = "fixed later" if error.fixed else "still failing"
        out.append((0 if not error.fixed else 2, -error.index, f"- Error ({state}): {error.text}", 1))
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
    files, errors = _missed(summary_text, probes)
    missed = {"files_written": files, "errors": [e.line for e in errors], "left_out": 0}
    if not files and not errors:
        return summary_text, missed
    base = summary_text.rstrip()
    header = f"\n\n{HEADING}\n{INTRO}"
    spent = counter.count_text(base + header)
    chosen: list[tuple[str, int]] = []
    for line, n in _candidates(files, errors, probes):
        cost = counter.count_text("\n" + line)
        if spent + cost <= budget_tokens:
            chosen.append((line, n))
            spent += cost
    render = lambda: base + header + "".join("\n" + line for line, _ in chosen) if chosen else summary_text
    while chosen and counter.count_text(render()) > budget_tokens:   # joined text may count a token more
        chosen.pop()
    missed["left_out"] = len(files) + len(errors) - sum(n for _, n in chosen)
    return render(), missed
