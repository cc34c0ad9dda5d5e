"""Throughput of the LLM summarizer: 100 conversations, 200 ms latency, concurrency 16.

Runs the real anthropic/openai SDKs against the fake provider on 127.0.0.1 the
way the local runner does (16 threads calling summarize(), max_in_flight 16)
and prints elapsed / ideal, where ideal = N x latency / concurrency.

    .venv/bin/python benchmarks/bench_llm_concurrency.py [--provider openai] [-n 100]
"""
from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

from hermes_pipeline.summarizers.base import SummaryRequest
from hermes_pipeline.summarizers.anthropic import AnthropicSummarizer
from hermes_pipeline.summarizers.openai import OpenAISummarizer
from hermes_pipeline.testing.fake_provider import FakeProvider


def conversation(i: int) -> list[dict]:
    return [{"role": "user", "content": f"conversation {i}: please fix tests in src/mod{i}.py"},
            {"role": "assistant", "content": f"Fixed src/mod{i}.py; all tests pass. " * 20}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["anthropic", "openai"], default="anthropic")
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")

    with FakeProvider() as fake:
        cls = AnthropicSummarizer if args.provider == "anthropic" else OpenAISummarizer
        url = fake.anthropic_base_url if args.provider == "anthropic" else fake.openai_base_url
        summarizer = cls(model_cfg={"name": "bench-model"}, aux_cfg={"base_url": url},
                         max_in_flight=args.concurrency, cache={"enabled": False})
        # Steady state: the SDK imported and a full pool of keep-alive connections open.
        warm = [SummaryRequest(f"warm-{i}", conversation(-1 - i), 2000, 200000) for i in range(args.concurrency)]
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(summarizer.summarize, warm))
        fake.default_latency = args.latency
        requests = [SummaryRequest(f"c{i}", conversation(i), 2000, 200000) for i in range(args.n)]
        started = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            results = list(pool.map(summarizer.summarize, requests))
        elapsed = time.perf_counter() - started
        summarizer.close()

    ideal = args.n * args.latency / args.concurrency
    fallbacks = sum(1 for r in results if r.fallback)
    retries = sum(r.retries for r in results)
    print(f"provider={args.provider} n={args.n} latency={args.latency}s concurrency={args.concurrency}")
    print(f"elapsed={elapsed:.2f}s ideal={ideal:.2f}s ratio={elapsed / ideal:.2f} "
          f"serial={args.n * args.latency:.1f}s retries={retries} fallbacks={fallbacks}")


if __name__ == "__main__":
    main()
