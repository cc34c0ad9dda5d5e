"""sweep.png: cost against quality, one dot per sweep point, readable whatever the sweep.

- The key (what each job number stands for) goes under the plot, across the whole
  width, and the figure grows until every line of it fits: nothing is cut at the edge.
- The legend sits inside the plot, where it covers the fewest dots.
- Points drawn at the same place share one label ("10, 11, 14, 15"); every label is
  moved around its dot until it overlaps no other label.
- The bill without compaction is a dashed vertical line, one per distinct value
  (points whose caching settings differ have different ones), named in the legend.
"""
from __future__ import annotations

import textwrap
from typing import Any

KEY_FONT, LABEL_FONT = 7.0, 7.5
PLOT_W, PLOT_H = 7.5, 4.2               # inches: the plot area
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 1.1, 0.3, 0.45, 0.6
KEY_LINES = 40                          # more points are in sweep.md
SAME_SPOT_PX = 6.0                      # dots closer than this share a label
DOT_PX = 4.0                            # half the size of a dot, for labels to keep off others' dots
LABEL_JOBS = 6                          # a shared label names this many jobs, then "+N"
# where a label may go, in points from its dot: right, above, left, below, then further out
OFFSETS = ((5, 4), (5, -11), (-5, 4), (-5, -11), (0, 9), (0, -16), (12, -4), (-12, -4),
           (5, 16), (-5, 16), (5, -23), (-5, -23))


def key_lines(scored: list, varying: list[str]) -> list[str]:
    lines = [f"{'*' if p.pareto else 'x' if p.overflows else ' '}{p.job:>4}: "
             + "  ".join(f"{k}={p.overrides.get(k, '–')}" for k in varying) for p in scored]
    more = len(lines) - KEY_LINES
    shown = lines[:KEY_LINES] + ([f"  … and {more} more points: see sweep.md"] if more > 0 else [])
    return ["job: settings   (* on the Pareto front, x more requests over the context)", *shown]


def no_compaction_lines(scored: list, varying: list[str]) -> list[tuple[float, str]]:
    """(cost, legend text) for each distinct bill without compaction, named by the settings that set
    its points apart from the others' (the cache TTL, typically)."""
    groups: dict[float, list] = {}
    for p in scored:
        cost = p.figures.get("replay_cost_no_compression_usd")
        if cost is not None:
            groups.setdefault(round(float(cost), 6), []).append(p)
    values = lambda members, k: {m.overrides.get(k) for m in members}
    telling = [k for k in varying if all(len(values(g, k)) == 1 for g in groups.values())
               and len(values(scored, k)) > 1]
    lines = []
    for cost, members in sorted(groups.items()):
        what = ", ".join(f"{k}={members[0].overrides.get(k)}" for k in telling)
        lines.append((cost, textwrap.shorten(f"no compaction{f' ({what})' if what else ''}: ${cost:.4f}", 90)))
    return lines


def _spots(ax, scored: list) -> list[tuple[tuple[float, float], list]]:
    """Dots grouped by where they are drawn (display pixels), in the order of `scored`."""
    spots: list[tuple[tuple[float, float], list]] = []
    for p in scored:
        x, y = ax.transData.transform((p.cost, p.quality))
        for (sx, sy), members in spots:
            if abs(sx - x) <= SAME_SPOT_PX and abs(sy - y) <= SAME_SPOT_PX:
                members.append(p)
                break
        else:
            spots.append(((x, y), [p]))
    return spots


def _overlap(a, b) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width * height if width > 0 and height > 0 else 0.0


def place_labels(fig, ax, scored: list) -> list:
    """One label per spot, each where it overlaps no other label and stays inside the plot."""
    from matplotlib.transforms import Bbox
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed: list = []
    spots = _spots(ax, scored)
    dots = [Bbox.from_extents(x - DOT_PX, y - DOT_PX, x + DOT_PX, y + DOT_PX) for (x, y), _ in spots]
    for (_, members), own in zip(spots, dots):
        jobs = [p.job for p in members]
        text = ", ".join(jobs[:LABEL_JOBS]) + (f" +{len(jobs) - LABEL_JOBS}" if len(jobs) > LABEL_JOBS else "")
        anchor = (members[0].cost, members[0].quality)
        best = None
        for dx, dy in OFFSETS:
            label = ax.annotate(text, anchor, textcoords="offset points", xytext=(dx, dy), fontsize=LABEL_FONT,
                                ha="left" if dx >= 0 else "right", zorder=4)
            box = label.get_window_extent(renderer)
            outside = box.x0 < frame.x0 or box.x1 > frame.x1 or box.y0 < frame.y0 or box.y1 > frame.y1
            cost = sum(_overlap(box, other.get_window_extent(renderer)) for other in placed) + (1e9 if outside else 0)
            cost += sum(_overlap(box, dot) for dot in dots if dot is not own) / 4    # covering a dot: less bad
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, label)
            else:
                label.remove()
            if cost == 0:
                break
        placed.append(best[1])
    return placed


def _fit_key(fig, ax, key) -> None:
    """Widen the figure until the key fits inside it; the plot takes the width."""
    renderer = fig.canvas.get_renderer()
    width = max(key.get_window_extent(renderer).width / fig.dpi + 0.3, MARGIN_L + PLOT_W + MARGIN_R)
    height = fig.get_figheight()
    fig.set_figwidth(width)
    ax.set_position([MARGIN_L / width, 1 - (MARGIN_T + PLOT_H) / height, (width - MARGIN_L - MARGIN_R) / width,
                     PLOT_H / height])
    key.set_position((0.15 / width, 1 - (MARGIN_T + PLOT_H + MARGIN_B) / height))


def sweep_figure(points: list, varying: list[str], cost_axis: str, quality_axis: str, title: str) -> Any | None:
    """The figure (a matplotlib Figure on an Agg canvas), or None when no point has both axes."""
    scored = [p for p in points if p.cost is not None and p.quality is not None]
    if not scored:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    key_text = key_lines(scored, varying)
    key_h = len(key_text) * KEY_FONT * 1.3 / 72 + 0.2
    height = MARGIN_T + PLOT_H + MARGIN_B + key_h
    fig = Figure(figsize=(MARGIN_L + PLOT_W + MARGIN_R, height), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_axes([0, 0, 1, 1])
    key = fig.text(0, 0, "\n".join(key_text), fontsize=KEY_FONT, family="monospace", va="top", ha="left")
    _fit_key(fig, ax, key)
    for p in scored:
        style = {"marker": "x"} if p.overflows else {"marker": "o", "edgecolors": "black" if p.pareto else "none"}
        ax.scatter(p.cost, p.quality, s=60 if p.pareto else 35, color="tab:red" if p.pareto else "tab:blue",
                   zorder=3, **style)   # an "x" has no edge to colour
    handles = []
    front = sorted((p for p in scored if p.pareto), key=lambda p: p.cost)
    if front:
        handles += ax.step([p.cost for p in front], [p.quality for p in front], where="post", color="tab:red",
                           linewidth=1.2, label="Pareto front", zorder=2)
    for n, (cost, text) in enumerate(no_compaction_lines(scored, varying)):
        handles.append(ax.axvline(cost, color="dimgray", linestyle=("--", ":", "-.")[n % 3], linewidth=1.0,
                                  label=text, zorder=1))
    handles.append(Line2D([], [], marker="o", linestyle="", color="tab:blue", label="sweep point (job number)"))
    if any(p.overflows for p in scored):
        handles.append(Line2D([], [], marker="x", linestyle="", color="tab:blue",
                              label="x: more requests over the context"))
    ax.set_xlabel(textwrap.fill(f"cost: {cost_axis}", 110), fontsize=8)
    ax.set_ylabel(textwrap.fill(f"quality: {quality_axis}", 60), fontsize=8)
    title = title if len(title) <= 90 else "…" + title[-89:]      # several folders: the end says most
    ax.set_title(f"sweep {title}: cost vs quality", fontsize=9)
    ax.margins(x=0.12, y=0.12)
    ax.grid(True, alpha=0.3)
    ax.autoscale_view()
    place_labels(fig, ax, scored)
    ax.legend(handles=handles, loc="best", fontsize=7, framealpha=0.9)
    return fig


def write_png(points: list, varying: list[str], cost_axis: str, quality_axis: str, path, title: str) -> bool:
    fig = sweep_figure(points, varying, cost_axis, quality_axis, title)
    if fig is None:
        return False
    fig.savefig(path)
    return True
