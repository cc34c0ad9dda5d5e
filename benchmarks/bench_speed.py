"""Speed and memory of the CLI (issue 29: within 20x of reading and writing the data on long sessions).

    .venv/bin/python -m benchmarks.bench_speed

Every figure is the CLI against the floor, orjson reading, parsing and re-writing the same files
(benchmarks/baseline_copy.py), in paired runs alternating with it, median ratio:
- the long-session benchmark: 40 synthetic sessions of ~130K tokens (testkit/synth.py), default
  config (target <= 20); the same without fixed start-up costs: (CLI - CLI on a one-line file) /
  (baseline - baseline on the one-line file); what start-up and exact counting alone would take;
- the real long sessions at the default config (target <= 5) and at model.context_length=16000;
- the shared corpus at the default config, and tau-bench (many short conversations) for reference;
- each of those runs' per-stage seconds, from their summary.json (the median over the paired runs);
- peak RSS (target <= 100 MiB), and on the input twice over / once (target <= 1.1);
- runner.processes=2 against 1 on the synthetic sessions (target >= 1.6), in pairs made while the
  shared machine really had two cores to give (measure.parallel_paired).
"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from benchmarks import datasets
from benchmarks.measure import (
    QUIET,
    REPEATS,
    WORK,
    Run,
    baseline,
    cli,
    cli_command,
    figure,
    fresh,
    median_run,
    paired,
    parallel_paired,
    size_of,
)
from testkit.env import CORPUS, LONG_SESSIONS

AREA = "speed"


def startup(work: Path) -> dict:
    """Fixed costs: the CLI and the baseline on a one-line file (start-up, imports, config, run folder)."""
    tiny = work / "one-line.jsonl"
    tiny.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    cli_run = median_run(lambda i: cli(work / f"tiny-{i}", f"input={tiny}"), max(REPEATS, 5))
    base_run = median_run(lambda i: baseline(tiny, work / f"tiny-copy-{i}"), max(REPEATS, 5))
    return {"cli": cli_run, "baseline": base_run}


def against_baseline(label: str, source: Path, overrides: list[str], work: Path, fixed: dict,
                     target: float | None) -> tuple[list[dict], dict]:
    """CLI compaction of `source` against the baseline on the same files, paired."""
    slug = label.split()[0]
    pair = paired(lambda i: baseline(source, work / f"{slug}-copy-{i}"),
                  lambda i: cli(work / f"{slug}-run-{i}", f"input={source}", *overrides))
    summaries = [run.summary() for run in pair.b]
    summary = summaries[0]
    net = lambda side, fixed_run, what: pair.median(side, what) - getattr(fixed_run, what)
    net_ratio = net("b", fixed["cli"], "wall") / net("a", fixed["baseline"], "wall")
    net_cpu = net("b", fixed["cli"], "cpu") / net("a", fixed["baseline"], "cpu")
    bound = ("<=", target) if target else None
    command = cli_command(f"input={source}", *overrides)
    megabytes = size_of(source) / 1e6
    rows = [
        figure(AREA, f"{label}: CLI / baseline, wall", pair.ratio("wall"), bound, None, "x",
               f"{megabytes:.1f} MB, {summary['conversations']} conversations, {summary['statuses']['compacted']} "
               f"compacted; CLI {pair.median('b'):.2f} s vs baseline {pair.median('a'):.3f} s (median of "
               f"{len(pair.a)} pairs); `{command}`"),
        figure(AREA, f"{label}: CLI / baseline, CPU", pair.ratio("cpu"), bound, None, "x",
               f"CLI {pair.median('b', 'cpu'):.2f} s CPU vs baseline {pair.median('a', 'cpu'):.3f} s"),
        figure(AREA, f"{label}: CLI / baseline without start-up, wall", net_ratio, None, None, "x",
               "(CLI - CLI on a one-line file) / (baseline - baseline on a one-line file), medians"),
        figure(AREA, f"{label}: CLI / baseline without start-up, CPU", net_cpu, None, None, "x"),
        figure(AREA, f"{label}: throughput", megabytes / pair.median("b"), None, None, "MB/s",
               f"baseline {megabytes / pair.median('a'):.1f} MB/s"),
        figure(AREA, f"{label}: peak RSS", statistics.median(r.rss_mib for r in pair.b), ("<=", 100), None, "MiB",
               f"largest single process of the run; the baseline {statistics.median(r.rss_mib for r in pair.a):.0f} "
               "MiB"),
    ]
    kept = ("conversations", "statuses", "token_ratio", "wall_seconds")
    return rows, {"runs": pair.b, "pairs": pair.describe(), "summary": {k: summary[k] for k in kept},
                  "baseline_wall": pair.median("a"), "stages": stage_seconds(summaries)}


def stage_seconds(summaries: list[dict]) -> dict[str, float]:
    """Seconds of each stage of a run (summary.json's `stages`, CPU of the threads that ran them), the median
    over the runs; `wall` and `process_cpu` for the whole run beside them."""
    names = list(dict.fromkeys(name for s in summaries for name in s.get("stages", {})))
    seconds = {name: statistics.median(s.get("stages", {}).get(name, {}).get("seconds", 0.0) for s in summaries)
               for name in names}
    seconds["wall"] = statistics.median(s["wall_seconds"] for s in summaries)
    seconds["process_cpu"] = statistics.median(s.get("process_cpu_seconds", 0.0) for s in summaries)
    return {name: round(value, 3) for name, value in seconds.items()}


def counting_alone(source: Path) -> dict[str, float]:
    """Seconds to count, or to estimate, every message of `source` and nothing else (best of 3, in this
    process; the exact counts uncached): a part of the work no compaction of it with a replayed bill can skip."""
    import orjson

    from hermes_pipeline.tokens import _parts, estimate_message_tokens, exact_counter
    count, _ = exact_counter()
    messages = [m for line in source.read_bytes().splitlines() if line.strip()
                for m in orjson.loads(line).get("messages", [])]
    exact = lambda: sum(extra + sum(map(count, texts)) for texts, extra in map(_parts, messages))
    estimate = lambda: sum(map(estimate_message_tokens, messages))
    best = {}
    for name, work in (("exact", exact), ("estimate", estimate)):
        times = []
        for _ in range(3):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
        best[name] = min(times)
    return best


def floor(label: str, source: Path, fixed: dict, baseline_wall: float) -> list[dict]:
    """What the ratio to the baseline would be if the CLI did nothing but start and count every message."""
    alone = counting_alone(source)
    start = fixed["cli"].wall
    return [figure(AREA, f"{label}: start-up + counting every message, nothing else / baseline, wall",
                   (start + alone["exact"]) / baseline_wall, None, None, "x",
                   f"start-up {start:.2f} s + exact cl100k count {alone['exact']:.2f} s vs baseline "
                   f"{baseline_wall:.3f} s; with the calibrated estimate instead of exact counts "
                   f"({alone['estimate']:.2f} s) x{(start + alone['estimate']) / baseline_wall:.1f}: "
                   "the least any run with a replayed bill (on by default) and Hydra's start-up can take")]


def analysis_share(label: str, stages: dict[str, float], baseline_wall: float) -> dict:
    """What the Python scans of the text cost on their own (the secret scan, probes and summarizer in the
    summarize stage, the score), against the baseline: the part a compiled scanner would have to shrink."""
    scans = stages.get("summarize", 0.0) + stages.get("score", 0.0)
    return figure(AREA, f"{label}: the summarize and score stages alone / baseline", scans / baseline_wall, None,
                  None, "x", f"{scans:.2f} s of the run's {stages.get('process_cpu', 0.0):.2f} s CPU (summary.json); "
                  f"baseline {baseline_wall:.3f} s")


def memory(label: str, once: list[Run], doubled: Path, overrides: list[str], work: Path) -> tuple[list[dict], dict]:
    """Peak RSS must follow the largest conversation, not the input: the same input twice over
    (RSS hardly varies between runs, so two runs of it against the paired runs of the input)."""
    slug = label.split()[0]
    twice = [cli(work / f"{slug}-rss-twice-{i}", f"input={doubled}", *overrides) for i in range(2)]
    rss_once = statistics.median(r.rss_mib for r in once)
    rss_twice = statistics.median(r.rss_mib for r in twice)
    return [figure(AREA, f"{label}: peak RSS, input twice over / once", rss_twice / rss_once, ("<=", 1.1),
                   None, "x", f"{rss_once:.0f} MiB once, {rss_twice:.0f} MiB twice (`input={doubled}`)")], \
        {"once": [r.rss_mib for r in once], "twice": [r.rss_mib for r in twice]}


def processes(label: str, source: Path, overrides: list[str], work: Path):
    slug = label.split()[0]
    pair, capacity, made = parallel_paired(
        lambda i: cli(work / f"{slug}-p1-{i}", f"input={source}", *overrides),
        lambda i: cli(work / f"{slug}-p2-{i}", f"input={source}", "runner.processes=2", *overrides))
    speedup, machine = 1 / pair.best_ratio("wall"), 1 / capacity.best_ratio("wall")
    quiet = sum(x.wall / y.wall >= QUIET for x, y in zip(capacity.a, capacity.b))
    return [figure(AREA, f"{label}: runner.processes=2 speed-up over 1, wall", speedup, (">=", 1.6), None, "x",
                   f"{quiet} of the {made} pairs quiet (two plain-Python processes gained >= {QUIET} beside "
                   f"them), best of {'those' if quiet else 'all'}: {pair.best('a'):.2f} s -> "
                   f"{pair.best('b'):.2f} s (median of those pairs x{1 / pair.ratio('wall'):.2f}); two processes of "
                   f"plain Python gained x{machine:.2f} beside them at best (2 cores, shared); CPU "
                   f"x{pair.ratio('cpu'):.2f} (processes=2 over 1)")], \
        {"pairs": pair.describe(), "capacity": capacity.describe()}


def figures() -> tuple[list[dict], dict]:
    work = fresh(WORK / "speed")
    rows, raw = [], {}
    fixed = startup(work)
    raw["startup"] = {k: vars(v) | {"run_dir": None} for k, v in fixed.items()}
    rows.append(figure(AREA, "CLI start-up (one-line file), wall", fixed["cli"].wall, None, None, "s",
                       f"CPU {fixed['cli'].cpu:.2f} s; baseline on the same file {fixed['baseline'].wall:.3f} s"))
    stages = raw["stages"] = {}

    long40 = datasets.long_sessions()
    label = "synthetic 40 x 130K"
    found, raw[label] = against_baseline(label, long40, [], work, fixed, target=20)
    rows += found
    stages[label] = raw[label].pop("stages")
    rows += floor(label, long40, fixed, raw[label]["baseline_wall"])
    rows.append(analysis_share(label, stages[label], raw[label]["baseline_wall"]))
    found, raw[label + " memory"] = memory(label, raw[label].pop("runs"), datasets.twice(long40, "long-40-twice.jsonl"),
                                           [], work)
    rows += found
    found, raw[label + " processes"] = processes(label, long40, [], work)
    rows += found

    shared = [("real long sessions", LONG_SESSIONS, [], 5),
              ("real long sessions @16K", LONG_SESSIONS, ["model.context_length=16000"], None),
              ("shared corpus", CORPUS, [], None)]
    for label, source, overrides, target in shared:
        if not sorted(source.rglob("*.jsonl")):
            continue
        found, raw[label] = against_baseline(label, source, overrides, work, fixed, target=target)
        rows += found
        stages[label] = raw[label].pop("stages")
        runs = raw[label].pop("runs")
        if label == "real long sessions":
            found, raw[label + " memory"] = memory(label, runs, datasets.twice(source, "long-sessions-twice"),
                                                   overrides, work)
            rows += found
    tau = CORPUS / "tau-bench" / "gpt-4o-airline.jsonl"
    if tau.exists():    # many short conversations: per-conversation costs, for reference (no target)
        label = "tau-bench @4K"
        found, raw[label] = against_baseline(label, tau, ["model.context_length=4000", "compression.protect_last_n=4"],
                                             work, fixed, target=None)
        raw[label].pop("runs")
        stages[label] = raw[label].pop("stages")
        rows += found[:1] + found[2:3]
    return rows, raw


def stage_table(stages: dict[str, dict[str, float]]) -> list[str]:
    """Markdown: seconds per stage (rows) of each measured input (columns)."""
    labels = list(stages)
    names = list(dict.fromkeys(name for entry in stages.values() for name in entry))
    lines = ["| stage | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{stages[label].get(name, 0.0):.3f}" for label in labels) + " |")
    return lines


def main() -> None:
    rows, raw = figures()
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
