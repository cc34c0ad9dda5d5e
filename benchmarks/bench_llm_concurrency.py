"""Throughput of the LLM summarizer at a fixed latency: N calls, C in flight.

Runs the real anthropic/openai SDKs against the fake provider the way the local
runner does (C threads calling summarize(), max_in_flight C) and prints
elapsed / ideal, where ideal = N x latency / C. The fake provider runs in its own
process, as a remote API would: in this process it would take the GIL from the
client on every reply (`--server thread` shows that).

    .venv/bin/python -m benchmarks.bench_llm_concurrency [--provider openai] [-n 64] [--latency 2] [--concurrency 16]

Targets: at 2 s per call, 64 calls and 16 in flight, at most 1.05x the ideal
(issue 20); at 200 ms and 100 calls the fixed cost per wave of replies shows.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from hermes_pipeline.summarizers.base import SummaryRequest
from hermes_pipeline.summarizers.llm.anthropic import AnthropicSummarizer
from hermes_pipeline.summarizers.llm.openai import OpenAISummarizer
from hermes_pipeline.testing.fake_provider import FakeProvider


def conversation(i: int) -> list[dict]:
    return [{"role": "user", "content": f"conversation {i}: please fix tests in src/mod{i}.py"},
            {"role": "assistant", "content": f"Fixed src/mod{i}.py; all tests pass. " * 20}]


@contextmanager
def fake_server(kind: str, latency: float):
    """The fake provider's base URL, served by another process (or a thread of this one)."""
    if kind == "thread":
        with FakeProvider(default_latency=latency) as fake:
            yield fake.base_url
        return
    server = subprocess.Popen([sys.executable, "-m", "hermes_pipeline.testing.fake_provider", "--port", "0",
                               "--quiet", "--latency", str(latency)], stdout=subprocess.PIPE, text=True)
    try:
        yield re.search(r"anthropic base_url: (http://\S+)", server.stdout.readline()).group(1)
    finally:
        server.terminate()
        server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["anthropic", "openai"], default="anthropic")
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--server", choices=["process", "thread"], default="process")
    args = parser.parse_args()
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")

    with fake_server(args.server, args.latency) as base_url:
        cls = AnthropicSummarizer if args.provider == "anthropic" else OpenAISummarizer
        url = base_url if args.provider == "anthropic" else base_url + "/v1"
        summarizer = cls(model_cfg={"name": "bench-model"}, aux_cfg={"base_url": url},
                         max_in_flight=args.concurrency, cache={"enabled": False})
        # Steady state: the SDK imported and a full pool of keep-alive connections open.
        warm = [SummaryRequest(f"warm-{i}", conversation(-1 - i), 2000, 200000) for i in range(args.concurrency)]
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(summarizer.summarize, warm))
        requests = [SummaryRequest(f"c{i}", conversation(i), 2000, 200000) for i in range(args.n)]
        started = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            results = list(pool.map(summarizer.summarize, requests))
        elapsed = time.perf_counter() - started
        summarizer.close()

    ideal = args.n * args.latency / args.concurrency
    fallbacks = sum(1 for r in results if r.fallback)
    retries = sum(r.retries for r in results)
    print(f"provider={args.provider} n={args.n} latency={args.latency}s concurrency={args.concurrency} "
          f"server={args.server}")
    print(f"elapsed={elapsed:.2f}s ideal={ideal:.2f}s ratio={elapsed / ideal:.2f} "
          f"serial={args.n * args.latency:.1f}s retries={retries} fallbacks={fallbacks}")


if __name__ == "__main__":
    main()
