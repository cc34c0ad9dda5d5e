"""`make bench`: every figure the open issues ask for, each against its target, in one report.

    .venv/bin/python -m benchmarks.run_all [--repeats N]
        [--only speed,regression,nightly,quality,retention,replay,tokens,fit,fitmode,templates]

Machines here are small and shared, so every figure is a ratio against
something measured in the same run (see benchmarks/measure.py). Generated
inputs are cached in bench-data/; the report is printed at the end and
written to bench-data/bench-report.md and bench-data/bench-report.json, and,
when every area ran, to docs/benchmarks.md (committed after a run: the
figures the documentation shows are this report's, never written by hand).
Each area also runs on its own: python -m benchmarks.bench_speed, bench_against,
bench_nightly, bench_quality, bench_replay, token_study, bench_fit, bench_fit_mode, bench_template_share.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

AREAS = ("speed", "regression", "nightly", "quality", "retention", "replay", "tokens", "fit", "fitmode", "templates")
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
QUALITY_TARGETS = {"files_written": ("files created/edited", 0.95), "user_turns": ("user turns", 0.98),
                   "errors": ("last errors", 0.80), "identifiers": ("identifiers", 0.80),
                   "files_read": ("files read", None), "errors_open": ("errors still open", None),
                   "open_tasks": ("open tasks / last plan", None), "commits": ("commits", None)}


def retention(seeds=range(1, 21)) -> dict:
    """Planted facts of synthetic sessions (testkit/synth.py) still in the compacted conversation."""
    from hermes_pipeline.transcript import Conversation
    from testkit.builders import engine_for
    from testkit.synth import make_session
    from testkit.validity import contains
    engine = engine_for(context_length=200_000, protect_last_n=20)
    total = kept = 0
    ratios = []
    for seed in seeds:
        record, facts = make_session(seed)
        result = engine.compress(Conversation(record["id"], record["messages"], "bench"))
        total += len(facts)
        kept += sum(contains(result.messages, f.text) for f in facts)
        ratios.append(result.outcome.tokens_after / result.outcome.tokens_before)
    return {"sessions": len(list(seeds)), "facts": total, "kept": kept, "retention": round(kept / total, 4),
            "mean_tokens_after_over_before": round(sum(ratios) / len(ratios), 3)}


def module_json(module: str, *args: str) -> dict:
    """Run `python -m benchmarks.<module> ... --json FILE`; its printed output goes to a log beside the report."""
    from benchmarks.measure import DATA
    logs = DATA / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out = logs / f"{module}.json"
    with open(logs / f"{module}.log", "wb") as log:
        subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *args, "--json", str(out)], check=True,
                       stdout=log, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parent.parent)
    return json.loads(out.read_text())


def quality_figures() -> tuple[list[dict], dict]:
    from benchmarks.bench_quality import shared_files
    from benchmarks.measure import figure
    found = module_json("bench_quality", "--context", "16000")
    compacted = sum(row["compacted"] for row in found["files"])
    scanned = len(shared_files())
    rows = []
    for kind, (name, floor) in QUALITY_TARGETS.items():
        entry = found["overall"].get(kind, {"kept": 0, "total": 0})
        share = entry["kept"] / entry["total"] if entry["total"] else None
        rows.append(figure("quality", f"shared files @16K: {name} kept", share, (">=", floor) if floor else None,
                           None, "share", f"{entry['kept']}/{entry['total']} over {compacted} compacted "
                           f"conversations in {len(found['files'])} of the {scanned} files (the rest stay under the "
                           "threshold)"))
    rows.append(figure("quality", "shared files @16K: summaries over their token budget", len(found["over_budget"]),
                       None, None, "", "; ".join(map(str, found["over_budget"][:3]))))
    return rows, found


def retention_figures() -> tuple[list[dict], dict]:
    from benchmarks.measure import figure
    found = retention()
    return [figure("quality", "synthetic planted facts kept", found["retention"], (">=", 0.95), None, "share",
                   f"{found['kept']}/{found['facts']} facts of {found['sessions']} sessions; tokens after/before "
                   f"{found['mean_tokens_after_over_before']}")], found


def replay_figures() -> tuple[list[dict], dict]:
    from benchmarks.measure import figure
    found = module_json("bench_replay")
    return [
        figure("replay", "replay / compaction, CPU", found["replay_over_compaction"], ("<=", 0.5), None, "x",
               f"{found['sessions']} real long sessions @16K, best of 9 each"),
        figure("replay", "replay time, session twice as long / once", found["growth_x2"], ("<=", 2.2), None, "x",
               f"{found['messages']} -> {2 * found['messages']} messages; messages looked at x{found['work_x2']:.2f}"),
        figure("replay", "replay time, 4x / 8x as long", f"{found['growth_x4']:.2f} / {found['growth_x8']:.2f}",
               None, None, "x", "linear: 4 / 8"),
    ], found


def token_figures() -> tuple[list[dict], dict]:
    from benchmarks.measure import figure
    found = module_json("token_study", "--skip-speed", "--synth", "0")
    rows = []
    for group, label in (("corpus", "shared corpus"), ("long", "long sessions")):
        entry = found["estimate"].get(group)
        if entry:
            name = f"estimate error of a conversation total (abs), {label}"
            rows.append(figure("tokens", f"{name}: median", entry["median"], None, None, "share",
                               f"{entry['conversations']} conversations; p95 {entry['p95']:.4f}"))
            rows.append(figure("tokens", f"{name}: max", entry["max"], ("<=", 0.02), None, "share",
                               "target: the README's 'within 2% of every total'"))
    differing = sum(v["differing"] for v in found["identity"].values())
    texts = sum(v["texts"] for v in found["identity"].values())
    rows.append(figure("tokens", "exact counter vs tiktoken: texts counted differently", differing, ("=", 0), None,
                       "", f"{texts} texts of the shared files"))
    return rows, found


def speed_figures():
    from benchmarks import bench_speed
    return bench_speed.figures()


def regression_figures():
    from benchmarks import bench_against
    return bench_against.figures()


def nightly_figures():
    from benchmarks import bench_nightly
    return bench_nightly.figures()


def fit_figures() -> tuple[list[dict], dict]:
    """Issue 19: every output within 85% of the context, or marked fits: false with its reason."""
    from benchmarks.measure import figure
    found = module_json("bench_fit", "--contexts", "16000,32000,64000,8000")
    rows = []
    for entry in found:
        context = entry["context"]
        target = ("=", 0) if context >= 16000 else None
        rows.append(figure("fit", f"shared files @{context // 1000}K: outputs over 85% not marked fits: false",
                           entry["over_unmarked"], target, None, "", f"{entry['over']} over, of "
                           f"{entry['conversations']}; largest output {entry['largest_share']} of the context"))
        if context == 16000:
            others = [r for r in entry["fits_false"] if "the latest user message alone" not in r["reason"]]
            rows.append(figure("fit", "shared files @16K: fits: false for another reason than the latest user "
                               "message alone", len(others), ("=", 0), None, "",
                               "; ".join(r["reason"] for r in others)))
    return rows, {"contexts": found}


def fit_mode_figures() -> tuple[list[dict], dict]:
    """Issue 22 item 5: compression.mode=fit against Hermes' trajectory_compressor at 16K, in the same run."""
    from benchmarks.measure import figure
    found = module_json("bench_fit_mode", "--targets", "16000,8000")
    rows = []
    for target, judged in found["targets"].items():
        ours, hermes = judged["ours (embedded)"], judged["hermes"]
        k = f"{int(target) // 1000}K"
        rows.append(figure("fitmode", f"Hermes trajectories @{k}: over the target where Hermes gets under it",
                           ours["over_where_another_fits"], ("=", 0), None, "",
                           f"ours {ours['over_after']} / Hermes {hermes['over_after']} over, of "
                           f"{ours['over_before']} before"))
        rows.append(figure("fitmode", f"Hermes trajectories @{k}: kept turns altered / order broken",
                           ours["altered_turns"] + ours["order_broken"], ("=", 0), None, "",
                           f"Hermes: {hermes['altered_turns']} altered, {hermes['order_broken']} broken"))
        rows.append(figure("fitmode", f"Hermes trajectories @{k}: wall time, ours / Hermes",
                           round(ours["wall"] / hermes["wall"], 3), None, None, "x",
                           f"tokens kept {ours['tokens_kept']:,} / {hermes['tokens_kept']:,}"))
    return rows, found


def template_figures() -> tuple[list[dict], dict]:
    """Issue 31: no summary section more than half template text, on the shared files at 4K-64K."""
    from benchmarks.measure import figure
    found = module_json("bench_template_share", "--contexts", "4000,8000,16000,32000,64000")
    rows = [figure("templates", f"shared files @{e['context'] // 1000}K: summary sections over half template text",
                   e["over_half"], ("=", 0), None, "", f"of {e['sections']}; largest share {e['largest_share']}")
            for e in found]
    return rows, {"contexts": found}


STEPS = {"speed": speed_figures, "regression": regression_figures, "nightly": nightly_figures,
         "quality": quality_figures, "retention": retention_figures, "replay": replay_figures, "tokens": token_figures,
         "fit": fit_figures, "fitmode": fit_mode_figures, "templates": template_figures}


def markdown(rows: list[dict], meta: dict, raw: dict) -> str:
    mark = {True: "met", False: "**NOT MET**", None: "—"}
    lines = [f"# hermes-pipeline bench report ({meta['finished']})", "",
             f"Total {meta['total_seconds']:.0f} s on {meta['machine']}; load average {meta['load_start']} at the "
             f"start, {meta['load_end']} at the end. Ratios are medians of paired runs made here; "
             f"{meta['repeats']} pairs unless said.", "",
             "| area | figure | value | target | met | stretch | note |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        value = f"{r['value']}{' ' + r['unit'] if r['unit'] else ''}"
        stretch = f"{r['stretch']} ({mark[r['stretch_met']]})" if r["stretch"] else ""
        note, name = (str(text).replace("|", "\\|") for text in (r["note"], r["figure"]))
        lines.append(f"| {r['area']} | {name} | {value} | {r['target'] or ''} | {mark[r['met']]} | "
                     f"{stretch} | {note} |")
    stages = (raw.get("speed") or {}).get("stages")
    if stages:
        from benchmarks.bench_speed import stage_table
        lines += ["", "Seconds per stage (summary.json of the speed runs: CPU of the threads that ran each stage, "
                  "median over the paired runs; `start` is the start-up before the first file, `plan` the "
                  "boundaries with the count of every message):", "", *stage_table(stages)]
    quality = raw.get("quality")
    if quality:
        kinds = list(QUALITY_TARGETS)
        lines += ["", "Quality per file (kept/total) at model.context_length=16000:", "",
                  "| file | compacted | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 2) + "|"]
        for row in quality["files"]:
            cells = [f"{row[k]['kept']}/{row[k]['total']}" if k in row else "" for k in kinds]
            lines.append(f"| {Path(row['file']).name} | {row['compacted']} | " + " | ".join(cells) + " |")
    for name, error in meta["errors"].items():
        lines += ["", f"**{name} failed:**", "```", error, "```"]
    met = [r["met"] for r in rows if r["met"] is not None]
    lines += ["", f"{sum(met)} of {len(met)} targets met."]
    return "\n".join(lines) + "\n"


def docs_page(report: str, meta: dict) -> str:
    """docs/benchmarks.md: how and when the figures were made, then the report."""
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                            cwd=DOCS.parent.parent).stdout.strip() or "unknown"
    head = ["# Benchmarks", "",
            f"Generated by `make bench` on {meta['finished']} at commit {commit}, {meta['machine']}; do not edit by "
            "hand: run `make bench` and commit the file it writes. The machine is small and shared: every figure "
            "is a ratio of runs made side by side in the same bench run (paired, alternating, median of the "
            "pairs), never an absolute time, and the load average below says how busy it was. The floor, "
            "`baseline`, is orjson reading, parsing and writing the same files (benchmarks/baseline_copy.py).", "",
            "Where the time goes: the speed rows `start-up + counting every message, nothing else / baseline` and "
            "`the summarize and score stages alone / baseline` split a run into what Hydra's start-up and the exact "
            "token count take (the replayed bill and the plan need every message counted) and what the Python "
            "scans of the text take (the secret scan, the probes, the embedded summarizer, the score); the stage "
            "table at the end has each stage's seconds.", ""]
    body = report.split("\n", 1)[1].lstrip("\n")     # the report without its own title
    return "\n".join(head) + "\n" + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(AREAS), help="comma-separated areas: " + ", ".join(AREAS))
    parser.add_argument("--repeats", type=int, help="pairs per ratio (default 3, or HERMES_BENCH_REPEATS)")
    args = parser.parse_args(argv)
    if args.repeats:
        os.environ["HERMES_BENCH_REPEATS"] = str(args.repeats)   # read by benchmarks.measure on import
    from benchmarks.measure import DATA, REPEATS
    started, load_start = time.perf_counter(), os.getloadavg()
    rows, raw, errors, seconds = [], {}, {}, {}
    for area in args.only.split(","):
        print(f"[bench] {area} ...", flush=True)
        step = time.perf_counter()
        try:
            found, raw[area] = STEPS[area]()
            rows += found
        except Exception:      # one broken area still leaves a report of the others
            errors[area] = traceback.format_exc()[-4000:]
            print(errors[area], file=sys.stderr)
        seconds[area] = round(time.perf_counter() - step, 1)
        print(f"[bench] {area} done in {seconds[area]} s", flush=True)
    meta = {"finished": time.strftime("%Y-%m-%d %H:%M:%S"), "total_seconds": time.perf_counter() - started,
            "seconds_per_area": seconds, "repeats": REPEATS, "errors": errors,
            "machine": f"{os.cpu_count()} CPUs, {platform.python_implementation()} {platform.python_version()}",
            "load_start": " ".join(f"{x:.1f}" for x in load_start),
            "load_end": " ".join(f"{x:.1f}" for x in os.getloadavg())}
    report = markdown(rows, meta, raw)
    DATA.mkdir(exist_ok=True)
    (DATA / "bench-report.md").write_text(report)
    (DATA / "bench-report.json").write_text(json.dumps({"meta": meta, "figures": rows, "details": raw}, indent=2,
                                                       default=str))
    print("\n" + report)
    print(f"written to {DATA / 'bench-report.md'} and bench-report.json (per-run details, per-file quality)")
    if set(args.only.split(",")) == set(AREAS):
        DOCS.parent.mkdir(exist_ok=True)
        DOCS.write_text(docs_page(report, meta))
        print(f"and to {DOCS.relative_to(DOCS.parent.parent)}: commit it with the change it measures")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
