"""`make bench`: throughput, memory and retention, each against a baseline run alongside.

Machines here are noisy, so every figure is a ratio against something measured
in the same run: compaction time against reading, parsing and re-writing the
same files; peak memory on a 3x larger input against the smaller one.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAU = Path(os.environ.get("HERMES_CORPUS", ROOT.parent / "shared" / "corpus")) / "tau-bench" / "gpt-4o-airline.jsonl"
DATA = ROOT / "bench-data"


def timed(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of a child process."""
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def peak_rss(command: list[str]) -> int:
    """Peak RSS (KiB) of one child, measured by a wrapper so earlier children don't count."""
    wrapper = ("import resource,subprocess,sys; subprocess.run(sys.argv[1:],check=True,"
               "stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", wrapper, *command], check=True, cwd=ROOT,
                         capture_output=True, text=True)
    return int(out.stdout.strip())


def compact_command(source: Path, run_dir: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "hermes_pipeline", f"input={source}", f"hydra.run.dir={run_dir}",
            "progress=none", *overrides]


def throughput(name: str, source: Path, overrides: list[str], work: Path, repeats: int = 3) -> dict:
    slug = "".join(ch if ch.isalnum() else "-" for ch in name)[:40]
    size = source.stat().st_size if source.is_file() else sum(p.stat().st_size for p in source.rglob("*.jsonl"))
    base = min(timed([sys.executable, str(ROOT / "benchmarks" / "baseline_copy.py"), str(source),
                      str(work / f"copy-{slug}-{i}")])[0] for i in range(repeats))
    runs = []
    for i in range(repeats):
        seconds, _ = timed(compact_command(source, work / f"run-{slug}-{i}", *overrides))
        runs.append(seconds)
    summary = json.loads((work / f"run-{slug}-0" / "summary.json").read_text())
    best = min(runs)
    conversations = summary["conversations"]
    return {
        "input": name, "megabytes": round(size / 1e6, 2), "conversations": conversations,
        "compacted": summary["statuses"]["compacted"],
        "compact_seconds": round(best, 2), "baseline_seconds": round(base, 2),
        "ratio_vs_baseline": round(best / base, 2),
        "MB_per_s": round(size / 1e6 / best, 2), "conversations_per_s": round(conversations / best, 1),
        "baseline_MB_per_s": round(size / 1e6 / base, 2),
        "token_ratio": summary["token_ratio"],
    }


def generate(count: int, path: Path) -> None:
    from tests.helpers.synth import write_sessions
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_sessions(path, range(1000, 1000 + count))


def retention(seeds=range(1, 21)) -> dict:
    from tests.helpers.builders import engine_for
    from tests.helpers.synth import make_session
    from tests.helpers.validity import contains

    from hermes_pipeline.transcript import Conversation
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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        large = DATA / "synth-60.jsonl"
        generate(60, large)
        results = {
            "throughput": [
                throughput("tau-bench (defaults: nothing over 100K)", TAU, [], work),
                throughput("tau-bench (context 4000, most compact)", TAU,
                           ["model.context_length=4000", "compression.protect_last_n=4"], work),
                throughput("synthetic 60 x ~130K-token sessions", large, [], work, repeats=2),
                throughput("same, runner.processes=2", large, ["runner.processes=2"], work, repeats=2),
            ],
        }
        # Memory must follow the largest conversation, not the input: the same 60
        # sessions twice over (twice the bytes, same largest conversation).
        doubled = work / "synth-60-twice.jsonl"
        doubled.write_bytes(large.read_bytes() * 2)
        rss_once = peak_rss(compact_command(large, work / "rss-once"))
        rss_twice = peak_rss(compact_command(doubled, work / "rss-twice"))
        results["memory"] = {"peak_rss_MiB_60_sessions": round(rss_once / 1024, 1),
                             "peak_rss_MiB_same_120_sessions": round(rss_twice / 1024, 1),
                             "ratio_twice_the_input": round(rss_twice / rss_once, 3)}
        results["retention"] = retention()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
