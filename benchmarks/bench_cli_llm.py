"""Throughput of summarizer=anthropic|openai through the real CLI, against the fake provider.

N conversations that all need a summary, a fixed latency per request and
`runner.concurrency` = `summarizer.max_in_flight` = C. Reported:

- request span: first request's arrival to the last reply, against the ideal N x L / C;
- CLI wall time, against a run of the same input with the embedded (extractive)
  summarizer, which does the same reading, compaction and writing but no requests:
  (wall - extractive wall) / ideal is what the model calls cost over the ideal,
  also shown without the one-off SDK import.

    .venv/bin/python benchmarks/bench_cli_llm.py [--provider openai] [-n 100] [--latency 0.2] [-c 16]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hermes_pipeline.testing.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parent.parent

MODELS = {"anthropic": ("claude-sonnet-4-5", "ANTHROPIC_API_KEY"), "openai": ("gpt-4o", "OPENAI_API_KEY")}


def cli(run_dir: Path, source: Path, *overrides: str, env: dict | None = None) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hermes_pipeline", f"input={source}", f"hydra.run.dir={run_dir}",
                    "progress=none", "model.context_length=8000", *overrides],
                   check=True, cwd=ROOT, env={**os.environ, **(env or {})},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def import_seconds(module: str) -> float:
    """What importing the SDK adds to a process start (paid once per CLI run)."""
    def start(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - started
    return min(start(f"import {module}") for _ in range(3)) - min(start("pass") for _ in range(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=sorted(MODELS), default="anthropic")
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("-c", "--concurrency", type=int, default=16)
    parser.add_argument("--threads", default="auto", help="runner.concurrency (auto: the runner's own choice)")
    args = parser.parse_args()
    model, key_env = MODELS[args.provider]

    from testkit.synth import write_sessions
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "sessions.jsonl"
        write_sessions(source, range(2000, 2000 + args.n), n_messages=40, target_tokens=6000)
        common = [f"model={model}", f"runner.concurrency={args.threads}"]
        extractive = cli(work / "extractive", source, *common)
        with FakeProvider(default_latency=args.latency) as fake:
            url = fake.base_url if args.provider == "anthropic" else fake.openai_base_url
            wall = cli(work / "llm", source, *common, f"summarizer={args.provider}",
                       f"summarizer.max_in_flight={args.concurrency}", "summarizer.cache.enabled=false",
                       f"auxiliary.compression.base_url={url}", env={key_env: "bench-key"})
            arrivals = sorted(r["time"] for r in fake.requests)
        summary = json.loads((work / "llm" / "summary.json").read_text())

    ideal = args.n * args.latency / args.concurrency
    sdk_import = import_seconds(args.provider)
    span = arrivals[-1] - arrivals[0] + args.latency
    print(json.dumps({
        "provider": args.provider, "conversations": args.n, "latency_s": args.latency,
        "concurrency": args.concurrency, "requests": len(arrivals),
        "compacted": summary["statuses"]["compacted"], "fallbacks": summary["fallbacks"],
        "ideal_s": round(ideal, 2), "serial_s": round(args.n * args.latency, 2),
        "request_span_s": round(span, 2), "span_over_ideal": round(span / ideal, 2),
        "cli_wall_s": round(wall, 2), "extractive_wall_s": round(extractive, 2),
        "(wall - extractive) / ideal": round((wall - extractive) / ideal, 2),
        "sdk_import_s": round(sdk_import, 2),
        "(wall - extractive - sdk_import) / ideal": round((wall - extractive - sdk_import) / ideal, 2),
    }, indent=2))


if __name__ == "__main__":
    main()
