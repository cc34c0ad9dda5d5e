"""Sweep report: which settings cost least and keep most, one row per point.

Written at the end of every multirun by a Hydra callback (registered in
conf/config.yaml), and by `hermes-pipeline-report DIR...` for any sweep folder
or set of run folders after the fact. Everything is read from each point's
folder: `.hydra/overrides.yaml` (the settings), `summary.json` (the figures),
`transcripts/` (a digest, to flag points whose outputs are identical).

Axes: cost = the replayed bill with compaction (summary.json `replay.cost_usd`,
hermes_pipeline/cost/replay.py); quality = the quality score averaged over every
conversation of the point, a conversation left whole counting 1.0 (nothing of
it was lost), when the runs have quality scores; else the share of tokens kept
(tokens_after / tokens_before): a proxy, more kept is less lost. So a point
that compacts nothing (compression.enabled=false) has quality 1.0 and competes
like any other. A point is on the Pareto front when no other point is at least
as cheap and at least as good, and better in one of the two; a point whose bill
has more requests longer than the model's context than the best-fitting point
does not work as it is (a model refuses them), so it is marked and kept off the
front. The report says when not compacting at all would cost less than every
point, and how many of those uncompacted requests would not fit the context.
"""
from __future__ import annotations

import csv
import hashlib
import json
import logging
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from hydra.experimental.callback import Callback

from hermes_pipeline.config.command_line import UsageParser
from hermes_pipeline.reports.sweep_plot import write_png

log = logging.getLogger(__name__)
FIGURES = ("status", "conversations", "compacted", "unchanged", "tokens_before", "tokens_after", "quality_score",
           "quality_score_compacted", "kept_share", "replay_cost_usd", "replay_cost_no_compression_usd",
           "replay_cost_no_caching_usd", "replay_cache_write_usd", "replay_cache_hit_rate", "replay_compactions",
           "replay_over_context", "replay_over_context_no_compression",
           "summarizer_calls", "summarizer_usd", "exam_score", "exam_examined", "exam_usd", "wall_seconds")


@dataclass
class Point:
    job: str
    folder: Path
    overrides: dict[str, str]
    figures: dict[str, Any]
    digest: str | None
    cost: float | None = None
    quality: float | None = None
    pareto: bool = False
    overflows: bool = False      # more requests over the context than the best-fitting point: off the front
    identical_to: str | None = None
    notes: list[str] = field(default_factory=list)
    order: int = 0               # its place in the folders given (a sweep folder's jobs by number)


def _get(mapping: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(mapping, dict):
            return None
        mapping = mapping.get(key)
    return mapping


def transcripts_digest(folder: Path) -> str | None:
    """SHA-256 over the relative names and bytes of every file under transcripts/."""
    root = folder / "transcripts"
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def quality_over_all(summary: dict) -> float | None:
    """The mean quality score over the compacted conversations and those left whole (1.0 each)."""
    score, compacted = _get(summary, "quality.score"), _get(summary, "statuses.compacted") or 0
    whole = _get(summary, "statuses.unchanged") or 0
    if score is None:      # nothing compacted (a whole conversation keeps all), or no quality stage
        return 1.0 if whole and not compacted else None
    scored = _get(summary, "quality.conversations") or compacted
    return round((score * scored + whole) / (scored + whole), 4) if scored + whole else score


def figures_of(summary: dict) -> dict[str, Any]:
    replay = summary.get("replay") or {}
    before, after = summary.get("tokens_before"), summary.get("tokens_after")
    return {
        "status": summary.get("status"),
        "conversations": summary.get("conversations"),
        "compacted": _get(summary, "statuses.compacted"),
        "unchanged": _get(summary, "statuses.unchanged"),
        "tokens_before": before, "tokens_after": after,
        "quality_score": quality_over_all(summary),
        "quality_score_compacted": _get(summary, "quality.score"),
        "kept_share": round(after / before, 4) if before and after is not None else None,
        "replay_cost_usd": replay.get("cost_usd"),
        "replay_cost_no_compression_usd": replay.get("cost_usd_no_compression"),
        "replay_cost_no_caching_usd": replay.get("cost_usd_no_caching"),
        "replay_cache_write_usd": replay.get("cache_write_usd"),
        "replay_cache_hit_rate": replay.get("cache_hit_rate"),
        "replay_compactions": replay.get("compactions"),
        "replay_over_context": replay.get("requests_over_context"),
        "replay_over_context_no_compression": replay.get("requests_over_context_no_compression"),
        "summarizer_calls": summary.get("summarizer_calls"),
        "summarizer_usd": _get(summary, "estimated_cost_usd.summarizer"),
        "exam_score": _get(summary, "exam.score"),
        "exam_examined": _get(summary, "exam.examined"),
        "exam_usd": _get(summary, "exam.cost_usd"),
        "wall_seconds": summary.get("wall_seconds"),
    }


# overrides that change how a run shows itself or where it writes, not what it computes
_NOT_SETTINGS = ("quiet", "progress")


def read_point(folder: Path, job: str) -> Point:
    overrides = {}
    path = folder / ".hydra" / "overrides.yaml"
    if path.is_file():
        for item in yaml.safe_load(path.read_text()) or []:
            key, _, value = str(item).partition("=")
            key = key.lstrip("+~")
            if key not in _NOT_SETTINGS and not key.startswith("hydra."):
                overrides[key] = value
    summary = json.loads((folder / "summary.json").read_text())
    return Point(job, folder, overrides, figures_of(summary), transcripts_digest(folder))


def find_points(dirs) -> list[Point]:
    """Run folders (with summary.json) given directly or one level below a sweep folder."""
    folders = []
    for d in map(Path, dirs):
        if (d / "summary.json").is_file():
            folders.append(d)
        elif d.is_dir():
            found = [p for p in d.iterdir() if (p / "summary.json").is_file()]
            folders += sorted(found, key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name))
    points, seen = [], set()
    for n, folder in enumerate(folders):
        # a sweep's job number, or a run folder's name; the parent folder tells two of one name apart
        job = folder.name if folder.name not in seen else f"{folder.parent.name}/{folder.name}"
        if job in seen:
            job = f"{job}#{n}"
        seen.add(job)
        points.append(replace(read_point(folder, job), order=n))
    return points


def rank(points: list[Point]) -> tuple[list[Point], str, str]:
    """Cost and quality of each point, the Pareto front, identical outputs; best first."""
    judged = all(p.figures["exam_score"] is not None for p in points)
    has_quality = any(p.figures["quality_score"] is not None for p in points)
    has_replay = any(p.figures["replay_cost_usd"] is not None for p in points)
    quality_axis = "the judged exam's score, 0-5 (exam.score: questions from each examined conversation as read, " \
                   "answered from the compacted one alone, graded)" if judged \
        else "quality.score over every conversation (one left whole counts 1.0)" if has_quality \
        else "share of tokens kept (tokens_after / tokens_before)"
    cost_axis = "replayed bill with compaction, USD (replay.cost_usd)" if has_replay \
        else "summarizer cost, USD (estimated_cost_usd.summarizer): no replay in these runs"
    for p in points:
        p.quality = p.figures["exam_score"] if judged else p.figures["quality_score"] if has_quality \
            else p.figures["kept_share"]
        p.cost = p.figures["replay_cost_usd"] if has_replay else p.figures["summarizer_usd"]
    scored = [p for p in points if p.cost is not None and p.quality is not None]
    over = lambda p: p.figures["replay_over_context"] or 0
    least_over = min(map(over, scored), default=0)    # what no setting here avoids (a message alone too long)
    for p in scored:
        p.overflows = over(p) > least_over
    # a run that did not finish read only part of its input: shown, never on the front
    working = [p for p in scored if not p.overflows and not _unfinished(p)]
    for p in working:
        p.pareto = not any(q.cost <= p.cost and q.quality >= p.quality and (q.cost < p.cost or q.quality > p.quality)
                           for q in working)
    first_of: dict[str, str] = {}
    for p in sorted(points, key=lambda p: p.order):
        if p.digest is not None:
            if p.digest in first_of:
                p.identical_to = first_of[p.digest]
            else:
                first_of[p.digest] = p.job
    inf = float("inf")
    ordered = sorted(points, key=lambda p: (not p.pareto, p.overflows, p.cost if p.cost is not None else inf,
                                            -(p.quality if p.quality is not None else -inf)))
    return ordered, cost_axis, quality_axis


def override_keys(points: list[Point]) -> tuple[list[str], dict[str, str]]:
    """(keys that vary between points, keys every point sets to the same value)."""
    keys = sorted({k for p in points for k in p.overrides})
    varying = [k for k in keys if len({p.overrides.get(k) for p in points}) > 1]
    fixed = {k: points[0].overrides.get(k) for k in keys if k not in varying}
    return varying, fixed


def write_csv(points: list[Point], path: Path) -> None:
    keys = sorted({k for p in points for k in p.overrides})
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["job", *keys, *FIGURES, "pareto", "over_context", "identical_to", "transcripts_sha256",
                         "folder"])
        for p in sorted(points, key=lambda p: p.order):
            writer.writerow([p.job, *(p.overrides.get(k, "") for k in keys),
                             *("" if p.figures[f] is None else p.figures[f] for f in FIGURES),
                             "yes" if p.pareto else "", "yes" if p.overflows else "", p.identical_to or "",
                             p.digest or "", str(p.folder)])


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _unfinished(point: Point) -> str:
    status = point.figures["status"]
    return f" ({status})" if status not in (None, "complete") else ""


def not_comparable(points: list[Point]) -> str | None:
    """A warning when the points did not read the same conversations (run folders of unrelated runs)."""
    inputs = {(p.figures["conversations"], p.figures["tokens_before"]) for p in points}
    if len(inputs) <= 1:
        return None
    shown = "; ".join(f"{n:,} conversations, {t:,} tokens" for n, t in sorted(inputs, key=str) if n is not None
                      and t is not None)
    return (f"these points did not read the same conversations ({shown}): their costs and qualities are not "
            "comparable, and the front says little. Compare runs of one input.")


def write_markdown(points: list[Point], cost_axis: str, quality_axis: str, path: Path, title: str) -> None:
    varying, fixed = override_keys(points)
    lines = [f"# Sweep report: {title}", "",
             f"{len(points)} points. Cost: {cost_axis}. Quality: {quality_axis}.", ""]
    warning = not_comparable(points)
    if warning:
        lines += [f"**Warning**: {warning}", ""]
    if fixed:
        lines += ["Same in every point: " + ", ".join(f"`{k}={v}`" for k, v in fixed.items()), ""]
    judged = any(p.figures["exam_score"] is not None for p in points)
    head = ["front", "job", *varying, "conversations", "compacted", "tokens before → after", "quality",
            *(["judged (0-5)", "quality.score"] if judged else []),
            "cost $", "cost $ without compaction", "requests over context", "cache hit", "summarizer calls",
            "summarizer $", *(["exam $"] if judged else []), "wall s", "same output as"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in points:
        f = p.figures
        lines.append("| " + " | ".join([
            "★" if p.pareto else "✗" if p.overflows else "", p.job + _unfinished(p),
            *(f"`{p.overrides[k]}`" if p.overrides.get(k) else "–" for k in varying),
            _fmt(f["conversations"]), _fmt(f["compacted"]),
            f"{_fmt(f['tokens_before'])} → {_fmt(f['tokens_after'])}", _fmt(p.quality),
            *([_fmt(f["exam_score"], 2), _fmt(f["quality_score"])] if judged else []),
            _fmt(p.cost), _fmt(f["replay_cost_no_compression_usd"]), _fmt(f["replay_over_context"]),
            _fmt(f["replay_cache_hit_rate"], 3),
            _fmt(f["summarizer_calls"]), _fmt(f["summarizer_usd"]), *([_fmt(f["exam_usd"])] if judged else []),
            _fmt(f["wall_seconds"], 2),
            f"job {p.identical_to} (identical transcripts)" if p.identical_to else ""]) + " |")
    front = [p.job for p in points if p.pareto]
    lines += no_compaction_warning(points) + over_context_note(points)
    lines += ["", f"★ Pareto front of cost vs quality: job(s) {', '.join(front) or 'none'}. No other working point "
              "is at least as cheap and at least as good; every other point off the front is beaten on both by one "
              "on it.",
              "Rows are best first: the front by cost, then the others by cost. Points flagged "
              "\"same output as\" wrote byte-identical transcripts: their settings differ only in what the "
              "bill or the run cost, not in what was kept."]
    path.write_text("\n".join(lines) + "\n")


def no_compaction_warning(points: list[Point]) -> list[str]:
    """Lines saying when not compacting at all beats every point on cost, and whether it would even fit."""
    costs = [p.cost for p in points if p.cost is not None]
    bare = [p for p in points if p.figures["replay_cost_no_compression_usd"] is not None]
    if not costs or not bare:
        return []
    cheapest = min(bare, key=lambda p: p.figures["replay_cost_no_compression_usd"])
    bare_cost = cheapest.figures["replay_cost_no_compression_usd"]
    if bare_cost >= min(costs):
        return []
    over = cheapest.figures["replay_over_context_no_compression"] or 0
    requests = "" if not over else (
        f" But {over:,} of its requests would be longer than the model's context (`model.context_length`) "
        "and fail: it is a price no agent could pay, and compaction is what makes those conversations fit.")
    return ["", f"**Not compacting at all would cost less than every point here**: ${bare_cost:.4f} (the bill "
            f"without compaction of job {cheapest.job}, with its caching settings) against ${min(costs):.4f} "
            "for the cheapest point. On these conversations each compaction (a summary call and a rewritten "
            "cache) costs more than the shorter prompts save." + requests]


def over_context_note(points: list[Point]) -> list[str]:
    """Lines on the requests longer than the model's context in the points' own bills."""
    counts = [p.figures["replay_over_context"] or 0 for p in points if p.cost is not None]
    if not any(counts):
        return []
    lines = [""]
    if min(counts):
        lines.append(f"Every point's bill has at least {min(counts):,} request(s) longer than the model's context: "
                     "ones no setting here avoids (a head, or a few messages, that alone outgrow it).")
    bad = [p for p in points if p.overflows]
    if bad:
        jobs = ", ".join(f"job {p.job} ({p.figures['replay_over_context']:,})" for p in bad)
        best = min(counts)
        lines.append(f"✗ Requests longer than the model's context in {jobs}, against {best:,} in the best-fitting "
                     "point: a model would refuse them, so those settings do not work as they are and are kept "
                     "off the front, whatever their cost and quality.")
    return lines


def write_report(dirs, out: Path, points: list[Point] | None = None) -> dict[str, Path]:
    """sweep.csv, sweep.md and sweep.png in `out` for the points found under `dirs` (or given, read already)."""
    points = find_points(dirs) if points is None else points
    if not points:
        raise FileNotFoundError(f"no run folders with a summary.json under {', '.join(map(str, dirs))}")
    ordered, cost_axis, quality_axis = rank(points)
    out.mkdir(parents=True, exist_ok=True)
    title = ", ".join(map(str, dirs))    # what was compared, wherever the report is written
    written = {"csv": out / "sweep.csv", "md": out / "sweep.md"}
    write_csv(ordered, written["csv"])
    write_markdown(ordered, cost_axis, quality_axis, written["md"], title)
    if write_png(ordered, override_keys(ordered)[0], cost_axis, quality_axis, out / "sweep.png", title):
        written["png"] = out / "sweep.png"
    return written


# Exit statuses of a sweep's points, read from their summary.json: with a launcher that runs
# points in other processes (joblib) the command line sees no return values of its own.
sweep_exit_codes: list[int] = []


class SweepReportCallback(Callback):
    """Hydra callback: the sweep report in the sweep folder once every point has run."""

    def on_multirun_end(self, config, **kwargs) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        for summary in sorted(sweep_dir.glob("*/summary.json")):
            sweep_exit_codes.append(int(json.loads(summary.read_text()).get("exit_code") or 0))
        try:
            written = write_report([sweep_dir], sweep_dir)
        except Exception:          # the points are done and kept: a failed report must not fail the sweep
            log.exception("sweep report could not be written in %s", sweep_dir)
            return
        print(f"sweep report: {written['md']}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = UsageParser(prog="hermes-pipeline-report",
                                     description="sweep.csv / sweep.md / sweep.png from a sweep folder or run folders")
    parser.add_argument("dirs", nargs="+", type=Path, help="a sweep folder, or run folders")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write (default: the folder given, or the current folder for several)")
    args = parser.parse_args(argv)
    out = args.out or (args.dirs[0] if len(args.dirs) == 1 else Path.cwd())
    points = find_points(args.dirs)     # read once: each point's folder, its transcripts hashed
    try:
        written = write_report(args.dirs, out, points)
    except FileNotFoundError as error:
        print(f"hermes-pipeline-report: error: {error}", file=sys.stderr)
        sys.exit(1)
    warning = not_comparable(points)
    if warning:
        print(f"hermes-pipeline-report: warning: {warning}", file=sys.stderr)
    for path in written.values():
        print(path)


if __name__ == "__main__":
    main()
