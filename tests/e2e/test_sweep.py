"""Sweeps with the real CLI: the report written at the end, the joblib launcher, the report command."""
import csv
import json
import shutil
import struct
from pathlib import Path

import pytest

from testkit.env import ROOT, read_jsonl, run_cli, run_module

SAMPLE = ROOT / "samples" / "tau-bench-airline.jsonl"
# Turns further apart than either TTL: no cached prefix survives between requests, so a
# smaller prompt is a cheaper one. With warm caches (the default 30 s) the summary calls and
# the rewrites after each compaction cost more than a 4K context saves (see docs/sweeps.md). 200-token
# summaries: with the floor's 400 (10% of 4K) each compaction rewrites more and costs about what it saves here.
SMALL = [f"input={SAMPLE}", "model.context_length=4000", "compression.protect_last_n=4", "replay.turn_gap_s=3700",
         "compression.summary_ceiling=200"]
TIMING = ("seconds", "wall_seconds", "process_cpu_seconds", "mb_per_second", "conversations_per_second")


def sweep(sweep_dir: Path, *overrides: str):
    result = run_module("hermes_pipeline", "-m", f"hydra.sweep.dir={sweep_dir}", "progress=none", *overrides)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    assert data[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82", "PNG is truncated"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grid") / "sweep"
    result = sweep(folder, *SMALL, "compression.threshold=0.4,0.6", "prompt_caching.cache_ttl=5m,1h")
    assert "sweep report:" in result.stdout
    return folder


def test_sweep_report_has_one_row_per_point_with_its_settings(grid):
    rows = csv_rows(grid / "sweep.csv")
    assert len(rows) == 4
    assert {(r["compression.threshold"], r["prompt_caching.cache_ttl"]) for r in rows} == {
        ("0.4", "5m"), ("0.4", "1h"), ("0.6", "5m"), ("0.6", "1h")}
    for row in rows:
        summary = json.loads((grid / row["job"] / "summary.json").read_text())
        assert int(row["conversations"]) == summary["conversations"] == 12
        assert float(row["replay_cost_usd"]) == summary["replay"]["cost_usd"] > 0
        assert float(row["quality_score_compacted"]) == summary["quality"]["score"]   # the run's own score
        # the point's quality: every conversation's, a conversation left whole counting 1.0 (one compacted with
        # nothing to probe has no score: it is counted apart)
        scores = [r["quality"]["score"] if r["status"] == "compacted" else 1.0
                  for r in read_jsonl(grid / row["job"] / "manifest.jsonl")
                  if r["status"] != "compacted" or r["quality"]["score"] is not None]
        assert abs(float(row["quality_score"]) - sum(scores) / len(scores)) < 1e-3
        assert float(row["quality_score"]) >= float(row["quality_score_compacted"])
        assert 0 < float(row["kept_share"]) < 1


def test_one_hour_and_five_minute_points_differ_in_cache_write_cost(grid):
    rows = csv_rows(grid / "sweep.csv")
    for threshold in ("0.4", "0.6"):
        write = {r["prompt_caching.cache_ttl"]: float(r["replay_cache_write_usd"])
                 for r in rows if r["compression.threshold"] == threshold}
        assert write["1h"] > write["5m"] > 0


def test_replay_without_compression_costs_more_for_conversations_that_compact(grid):
    for job in range(4):
        rows = [r for r in read_jsonl(grid / str(job) / "manifest.jsonl") if r["replay"]["compactions"]]
        assert rows
        on = sum(r["replay"]["cost_usd"] for r in rows)
        off = sum(r["replay"]["cost_usd_no_compression"] for r in rows)
        assert off > on, (job, on, off)
        untouched = [r for r in read_jsonl(grid / str(job) / "manifest.jsonl") if not r["replay"]["compactions"]]
        assert all(r["replay"]["cost_usd"] == r["replay"]["cost_usd_no_compression"] for r in untouched)


def test_sweep_png_is_a_valid_png(grid):
    width, height = png_size(grid / "sweep.png")
    assert width >= 400 and height >= 300


def test_sweep_md_marks_the_pareto_front_best_first(grid):
    text = (grid / "sweep.md").read_text()
    table = [line for line in text.splitlines() if line.startswith("| ") and "job" not in line]
    assert len(table) == 4
    front = {r["job"] for r in csv_rows(grid / "sweep.csv") if r["pareto"] == "yes"}
    marked = {line.split("|")[2].strip() for line in table if line.split("|")[1].strip() == "★"}
    assert marked == front and front
    assert table[0].split("|")[1].strip() == "★"          # the front comes first
    assert "Pareto front" in text
    # no point off the front is both cheaper and at least as good as one on it
    rows = {r["job"]: r for r in csv_rows(grid / "sweep.csv")}
    for job in set(rows) - front:
        assert any(float(rows[f]["replay_cost_usd"]) <= float(rows[job]["replay_cost_usd"])
                   and float(rows[f]["kept_share"]) >= float(rows[job]["kept_share"]) for f in front)


def _comparable(run: Path) -> tuple:
    transcripts = {p.relative_to(run): p.read_bytes() for p in sorted((run / "transcripts").rglob("*")) if p.is_file()}
    timing = lambda key: key in TIMING or key.endswith(".seconds")     # each stage's CPU seconds too
    manifest = [{k: v for k, v in row.items() if not timing(k)} for row in read_jsonl(run / "manifest.jsonl")]
    summary = {k: v for k, v in json.loads((run / "summary.json").read_text()).items() if not timing(k)}
    summary["stages"] = {name: {k: v for k, v in entry.items() if k != "seconds"}
                         for name, entry in summary["stages"].items()}
    return transcripts, manifest, summary


def test_joblib_launcher_gives_the_same_output_as_the_basic_one(tmp_path):
    points = ["compression.threshold=0.4,0.6"]
    sweep(tmp_path / "basic", *SMALL, *points)
    sweep(tmp_path / "joblib", *SMALL, *points, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    for job in ("0", "1"):
        assert _comparable(tmp_path / "basic" / job) == _comparable(tmp_path / "joblib" / job)
    basic, joblib = csv_rows(tmp_path / "basic" / "sweep.csv"), csv_rows(tmp_path / "joblib" / "sweep.csv")
    drop = lambda rows: [{k: v for k, v in r.items() if k not in ("wall_seconds", "folder")} for r in rows]
    assert drop(basic) == drop(joblib)
    # one report over both sweeps: each joblib point has the same transcripts as its basic twin
    report = run_module("hermes_pipeline.reports.sweep", str(tmp_path / "basic" / "0"),
                             str(tmp_path / "basic" / "1"), str(tmp_path / "joblib" / "0"),
                             str(tmp_path / "joblib" / "1"), "--out", str(tmp_path / "both"), timeout=120)
    assert report.returncode == 0, report.stderr
    rows = csv_rows(tmp_path / "both" / "sweep.csv")
    assert [r["identical_to"] for r in rows] == ["", "", "0", "1"]
    assert (tmp_path / "both" / "sweep.md").read_text().count("(identical transcripts)") == 2
    assert [Path(r["folder"]).parent.name for r in rows] == ["basic", "basic", "joblib", "joblib"]


def test_report_command_works_on_runs_without_replay_or_with_a_quality_score(tmp_path, grid):
    old, scored = tmp_path / "old", tmp_path / "scored"
    for target, job in ((old, "0"), (scored, "2")):
        shutil.copytree(grid / job, target)
    summary = json.loads((old / "summary.json").read_text())
    del summary["replay"]                      # a run folder from before the replay existed
    (old / "summary.json").write_text(json.dumps(summary))
    result = run_module("hermes_pipeline.reports.sweep", str(old), "--out", str(tmp_path / "r1"), timeout=120)
    assert result.returncode == 0, result.stderr
    (row,) = csv_rows(tmp_path / "r1" / "sweep.csv")
    assert row["replay_cost_usd"] == "" and row["pareto"] == "yes"
    assert "summarizer cost" in (tmp_path / "r1" / "sweep.md").read_text()
    assert (tmp_path / "r1" / "sweep.md").read_text().startswith(f"# Sweep report: {old}\n")   # what it compares
    expected = []
    for folder, score in ((old, 0.9), (scored, 0.7)):
        summary = json.loads((folder / "summary.json").read_text())
        compacted, whole = summary["statuses"]["compacted"], summary["statuses"]["unchanged"]
        summary["quality"] = {"score": score, "conversations": compacted}
        (folder / "summary.json").write_text(json.dumps(summary))
        expected.append(str(round((score * compacted + whole) / (compacted + whole), 4)))
    from hermes_pipeline.reports.sweep import write_report
    written = write_report([old, scored], tmp_path / "r2")
    assert set(written) == {"csv", "md", "png"}
    assert "Quality: quality.score over every conversation" in written["md"].read_text()
    assert [r["quality_score"] for r in csv_rows(written["csv"])] == expected


def test_report_command_says_so_when_there_is_nothing_to_report(tmp_path):
    result = run_module("hermes_pipeline.reports.sweep", str(tmp_path), timeout=120)
    assert result.returncode == 1 and "no run folders" in result.stderr


def test_manifest_replay_is_the_replay_of_the_stored_conversation(grid):
    """The run loop hands the engine's counts to the replay: the same figures as replaying directly."""
    from omegaconf import OmegaConf

    from hermes_pipeline.components import replay_settings_from_config as settings_from_config
    from hermes_pipeline.cost.replay import replay
    from hermes_pipeline.tokens import TokenCounter
    cfg = OmegaConf.load(grid / "1" / ".hydra" / "config.yaml")
    settings = settings_from_config(cfg)
    assert settings.cache_ttl == "1h" and settings.turn_gap_s == 3700
    rows = read_jsonl(grid / "1" / "manifest.jsonl")
    for record, row in zip(read_jsonl(SAMPLE), rows):
        messages = record["messages"]
        expected = replay(messages, TokenCounter().count_messages(messages), None, settings).to_dict()
        assert row["replay"] == expected


def test_the_default_sweep_folder_holds_every_point_under_joblib_too(tmp_path):
    """The sweep folder's name has the launching process's id: joblib's workers must name the same one."""
    result = run_module("hermes_pipeline", "-m", "progress=none", "quiet=true", *SMALL, "compression.threshold=0.4,0.6",
                        "prompt_caching.cache_ttl=5m,1h", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (folder,) = (tmp_path / "runs" / "multirun").glob("*/*")
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["0", "1", "2", "3"]
    assert len(csv_rows(folder / "sweep.csv")) == 4 and "sweep report:" in result.stdout


def test_hydra_mode_multirun_given_as_an_override_still_sweeps(tmp_path):
    """The run skips Hydra's second composition (it only reads `hydra.mode`), except when the mode is given."""
    result = run_module("hermes_pipeline", "hydra.mode=MULTIRUN", f"hydra.sweep.dir={tmp_path / 's'}", "progress=none",
                        "quiet=true", *SMALL, "compression.threshold=0.4,0.6", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in (tmp_path / "s").iterdir() if p.is_dir()) == ["0", "1"]
    assert len(csv_rows(tmp_path / "s" / "sweep.csv")) == 2



@pytest.fixture(scope="module")
def on_off(tmp_path_factory):
    """compression.enabled as a sweep axis, with the warm caches of docs/sweeps.md (a turn every 10 minutes, 1h TTL),
    where compaction costs more than it saves on these short conversations."""
    folder = tmp_path_factory.mktemp("on-off") / "sweep"
    warm = [o for o in SMALL if not o.startswith("replay.turn_gap_s=")] + ["replay.turn_gap_s=600"]
    sweep(folder, *warm, "compression.enabled=true,false", "prompt_caching.cache_ttl=1h")
    return folder, {r["compression.enabled"].lower(): r for r in csv_rows(folder / "sweep.csv")}


def test_not_compacting_is_scored_like_any_point_but_kept_off_the_front_when_it_does_not_fit(on_off):
    """That point keeps everything (quality 1.0) and costs least here, but its bill sends requests no
    4K-context model would take: it is marked, and the front is made of settings that work."""
    folder, rows = on_off
    off, on = rows["false"], rows["true"]
    assert off["compacted"] == "0" and float(off["quality_score"]) == 1.0 and off["quality_score_compacted"] == ""
    assert off["replay_cost_usd"] == off["replay_cost_no_compression_usd"]
    assert float(off["replay_cost_usd"]) < float(on["replay_cost_usd"])     # it would win on both counts ...
    assert int(off["replay_over_context"]) > int(on["replay_over_context"])  # ... if it fitted
    assert (off["pareto"], off["over_context"]) == ("", "yes") and (on["pareto"], on["over_context"]) == ("yes", "")
    text = (folder / "sweep.md").read_text()
    assert f"job {off['job']} ({int(off['replay_over_context']):,})" in text and "kept off the front" in text
    assert any(line.startswith(f"| ✗ | {off['job']} |") for line in text.splitlines())


def test_the_report_says_when_not_compacting_beats_every_point_and_would_not_fit(tmp_path, on_off, grid):
    folder, rows = on_off
    on = rows["true"]
    assert float(on["replay_cost_no_compression_usd"]) < float(on["replay_cost_usd"])   # warm caches: see above
    from hermes_pipeline.reports.sweep import write_report
    text = write_report([folder / on["job"]], tmp_path / "out")["md"].read_text()
    assert "Not compacting at all would cost less than every point here" in text
    assert f"${float(on['replay_cost_no_compression_usd']):.4f}" in text
    assert f"{int(on['replay_over_context_no_compression']):,} of its requests would be longer" in text
    # where compaction pays (caches expire between turns: the grid), nothing of the kind is said
    cheapest = min(float(r["replay_cost_usd"]) for r in csv_rows(grid / "sweep.csv"))
    assert all(float(r["replay_cost_no_compression_usd"]) > cheapest for r in csv_rows(grid / "sweep.csv"))
    assert "Not compacting at all would cost less" not in (grid / "sweep.md").read_text()


def test_the_report_warns_when_its_runs_read_different_conversations(tmp_path, grid, on_off):
    folder, rows = on_off
    other = folder / rows["true"]["job"]             # the samples at another turn gap: same conversations
    same = run_module("hermes_pipeline.reports.sweep", str(grid / "0"), str(other),
                           "--out", str(tmp_path / "same"), timeout=120)
    assert same.returncode == 0 and "warning" not in same.stderr
    unrelated, part = tmp_path / "unrelated", tmp_path / "part.jsonl"
    part.write_bytes(b"".join(Path(SAMPLE).read_bytes().splitlines(keepends=True)[:3]))   # another input
    assert run_cli(unrelated, f"input={part}", "model.context_length=4000").returncode == 0
    result = run_module("hermes_pipeline.reports.sweep", str(grid / "0"), str(unrelated),
                             "--out", str(tmp_path / "mixed"), timeout=120)
    assert result.returncode == 0
    assert "did not read the same conversations" in result.stderr
    assert "**Warning**: these points did not read the same conversations" in (tmp_path / "mixed" / "sweep.md").read_text()


def test_the_report_names_every_point_apart_and_shows_only_settings(tmp_path, grid, on_off):
    plain = tmp_path / "2"                              # a run folder named like the sweep's job 2
    assert run_cli(plain, *SMALL[:2], "quiet=true").returncode == 0
    result = run_module("hermes_pipeline.reports.sweep", str(grid / "2"), str(grid / "3"),
                             str(plain), str(on_off[0]), "--out", str(tmp_path / "r"), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "UserWarning" not in result.stderr          # the ✗ point of on_off is drawn without a warning
    rows = csv_rows(tmp_path / "r" / "sweep.csv")
    jobs = [r["job"] for r in rows]
    assert len(set(jobs)) == len(jobs) == 5 and jobs[:3] == ["2", "3", f"{tmp_path.name}/2"]
    assert "quiet" not in rows[0] and "progress" not in rows[0]     # how a run shows itself is no setting
    md = (tmp_path / "r" / "sweep.md").read_text()
    assert "``" not in md and "quiet" not in md
    assert "| – |" in md                                # a setting a point does not give


def test_a_run_that_did_not_finish_is_shown_as_such_and_kept_off_the_front(tmp_path, grid):
    killed = tmp_path / "killed"
    shutil.copytree(grid / "3", killed)
    summary = json.loads((killed / "summary.json").read_text())
    summary["status"] = "interrupted"
    (killed / "summary.json").write_text(json.dumps(summary))
    from hermes_pipeline.reports.sweep import write_report
    written = write_report([grid / "2", killed], tmp_path / "r")
    rows = {r["job"]: r for r in csv_rows(written["csv"])}
    assert rows["killed"]["status"] == "interrupted" and rows["killed"]["pareto"] == ""
    assert rows["2"]["pareto"] == "yes"                  # the only complete point
    assert "| killed (interrupted) |" in written["md"].read_text()


# -- the plot: readable whatever the sweep ------------------------------------------------------


def assert_readable(fig, points) -> None:
    """Everything drawn inside the figure, labels apart, the legend inside the plot, a line per bill
    without compaction."""
    from hermes_pipeline.reports.sweep_plot import _overlap
    fig.canvas.draw()                   # as saved: axis labels are placed when drawn
    renderer = fig.canvas.get_renderer()
    [ax] = fig.axes
    inside = lambda box: fig.bbox.x0 - 1 <= box.x0 and box.x1 <= fig.bbox.x1 + 1 and \
        fig.bbox.y0 - 1 <= box.y0 and box.y1 <= fig.bbox.y1 + 1
    assert inside(ax.get_tightbbox(renderer))        # ticks, axis labels, title, labels, legend
    for text in fig.texts:                           # the key
        assert inside(text.get_window_extent(renderer)), f"cut at the edge: {text.get_text()[:80]!r}"
    labels = list(ax.texts)
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i, a in enumerate(boxes):
        assert ax.bbox.contains(a.x0, a.y0) and ax.bbox.contains(a.x1, a.y1), labels[i].get_text()
        for j in range(i + 1, len(boxes)):
            assert _overlap(a, boxes[j]) == 0, (labels[i].get_text(), labels[j].get_text())
    assert 0 < len(labels) <= len(points)            # dots at one place share a label
    legend = ax.get_legend().get_window_extent(renderer)
    assert ax.bbox.contains(legend.x0, legend.y0) and ax.bbox.contains(legend.x1, legend.y1)
    bare = {round(float(p.figures["replay_cost_no_compression_usd"]), 6) for p in points
            if p.figures.get("replay_cost_no_compression_usd") is not None}
    vertical = {round(float(line.get_xdata()[0]), 6) for line in ax.get_lines()
                if len(set(line.get_xdata())) == 1 and line.get_label().startswith("no compaction")}
    assert vertical == bare and bare


def test_the_plot_of_a_real_sweep_is_readable(grid):
    from hermes_pipeline.reports.sweep import find_points, override_keys, rank
    from hermes_pipeline.reports.sweep_plot import sweep_figure
    points, cost_axis, quality_axis = rank(find_points([grid]))
    fig = sweep_figure(points, override_keys(points)[0], cost_axis, quality_axis, str(grid))
    assert_readable(fig, points)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("no compaction (prompt_caching.cache_ttl=1h): $") for t in legend)   # told apart


def test_the_plot_stays_readable_with_long_settings_many_points_and_dots_on_one_spot():
    """What cut the key at `context_length=320` and piled labels on each other: long values, 45 points,
    a dozen of them at one place (identical outputs), others close together."""
    from hermes_pipeline.reports.sweep import Point
    from hermes_pipeline.reports.sweep_plot import KEY_LINES, sweep_figure
    varying = ["model.context_length", "compression.target_ratio", "prompt_caching.cache_ttl",
               "input.path", "summarizer"]
    points = []
    for n in range(45):
        same_spot = n < 12
        figures = {"replay_cost_no_compression_usd": 3.0626 if n % 2 else 0.9733}
        points.append(Point(str(n), Path(f"/sweep/{n}"), {
            "model.context_length": str(32000 if same_spot else 3200 + 100 * n), "compression.target_ratio": "0.1",
            "prompt_caching.cache_ttl": "1h" if n % 2 else "5m",
            "input.path": "/data/archive/sessions/2026/very/long/folder/name/of/a/team", "summarizer": "anthropic"},
            figures, None, cost=1.0 if same_spot else 1.0 + 0.01 * (n % 7) + 0.3 * (n // 7),
            quality=1.0 if same_spot else 0.70 + 0.002 * n, pareto=n in (0, 12)))
    fig = sweep_figure(points, varying, "replayed bill, USD", "quality score", "/sweep")
    assert_readable(fig, points)
    key = next(t.get_text() for t in fig.texts if t.get_text().startswith("job: settings"))
    assert "model.context_length=32000" in key and "summarizer=anthropic" in key
    assert key.count("\n") == KEY_LINES + 1 and "and 5 more points: see sweep.md" in key
    shared = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("0, 1, 2")]
    assert shared == ["0, 1, 2, 3, 4, 5 +6"]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "no compaction (prompt_caching.cache_ttl=5m): $0.9733" in legend     # what sets the line apart, only
