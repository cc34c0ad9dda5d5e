"""What a summary request costs and keeps: summarizer.input=digest against full, and the Hermes agent's own.

On the shared long sessions and the corpus (format detected per file, as a run
reads them), at a small context so the long ones all compact, every compacted
conversation is summarized by summarizer=anthropic against the fake provider,
once with input=digest and once with input=full. Per mode: the input tokens sent
(cl100k of the instructions + the user prompt, every request of the summary
counted), the quality probes the compacted conversation keeps, and what the
artifact-trail guard had to add to the model's summary. The Hermes agent's
ContextCompressor (hermes-agent, the `hermes` extra) compresses the same
conversations against the same fake provider, and its requests are counted the
same way.

    .venv/bin/python -m benchmarks.bench_digest [--context 16000] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from hermes_pipeline.analysis.score import KINDS
from hermes_pipeline.testing.fake_provider import FakeProvider
from hermes_pipeline.tokens import TokenCounter
from testkit.env import CORPUS, LONG_SESSIONS
from testkit.sessions import make_engine, measure, read_conversations

MODES = ("digest", "full")
SETS = {"long sessions": LONG_SESSIONS, "corpus": CORPUS}


def request_texts(body: dict) -> list[str]:
    """The text a request sends: system prompt and messages."""
    system = body.get("system") or []
    texts = [system] if isinstance(system, str) else [block.get("text", "") for block in system]
    for message in body.get("messages") or []:
        content = message.get("content")
        texts += [content] if isinstance(content, str) else [p.get("text", "") for p in content or []]
    return texts


def add_requests(totals: dict, sent: list[dict], counter: TokenCounter) -> None:
    """Requests counted two ways: cl100k tokens, and characters / 4 (what the fake provider bills)."""
    texts = [text for request in sent for text in request_texts(request["body"])]
    totals["requests"] += len(sent)
    totals["input_tokens"] += sum(counter.count_text(text) for text in texts)
    totals["chars_over_4"] += sum(len(text) for text in texts) // 4


def ours(files: list[Path], context: int, mode: str, fake: FakeProvider, counter: TokenCounter) -> dict:
    engine = make_engine(context, "summarizer=anthropic", f"auxiliary.compression.base_url={fake.base_url}",
                         "summarizer.cache.enabled=false", f"summarizer.input={mode}")
    totals = {"conversations": 0, "requests": 0, "input_tokens": 0, "chars_over_4": 0, "guard_added": 0, "guard_left_out": 0,
              "fallbacks": 0, "score": 0.0, "ids": [], **{kind: [0, 0] for kind in KINDS}}
    for path in files:
        for conversation in read_conversations(path):
            before = fake.request_count
            result = measure(engine, conversation)
            if result is None:
                continue
            sent = fake.requests[before:]
            stats = result["compaction"].outcome.stats
            totals["conversations"] += 1
            totals["ids"].append(conversation.id)
            add_requests(totals, sent, counter)
            totals["guard_added"] += stats.get("artifact_trail_items_added", 0)
            totals["guard_left_out"] += stats.get("artifact_trail_items_left_out", 0)
            totals["fallbacks"] += bool(result["compaction"].outcome.summary.fallback)
            totals["score"] += result["score"]
            for kind in KINDS:
                totals[kind][0] += result[kind]["kept"]
                totals[kind][1] += result[kind]["total"]
    engine.close()
    return totals


def hermes(files: list[Path], ids: set[str], context: int, fake: FakeProvider, counter: TokenCounter) -> dict:
    """The Hermes agent's compressor on the conversations we compacted: one fresh compressor each."""
    from agent.context_compressor import ContextCompressor
    totals = {"conversations": 0, "requests": 0, "input_tokens": 0, "chars_over_4": 0}
    for path in files:
        for conversation in read_conversations(path):
            if conversation.id not in ids:
                continue
            compressor = ContextCompressor(model="gpt-4o", base_url=fake.openai_base_url, api_key="bench",
                                           provider="custom", config_context_length=context, quiet_mode=True)
            before = fake.request_count
            compressor.compress([dict(m) for m in conversation.messages])
            sent = fake.requests[before:]
            totals["conversations"] += 1
            add_requests(totals, sent, counter)
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", type=int, default=16000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-home-"))   # Hermes' own config, empty
    counter = TokenCounter()
    report = {}
    with FakeProvider() as fake:
        for name, root in SETS.items():
            files = sorted(root.rglob("*.jsonl"))
            runs = {mode: ours(files, args.context, mode, fake, counter) for mode in MODES}
            ids = set(runs["digest"].pop("ids")) & set(runs["full"].pop("ids"))
            runs["hermes"] = hermes(files, ids, args.context, fake, counter)
            report[name] = runs
    print(f"context {args.context:,}: input tokens sent to the summarizer, probes kept, guard additions")
    print(f"{'set':14} {'input':7} {'conv':>4} {'req':>4} {'input tokens':>12} {'chars/4':>8} {'per summary':>11} "
          f"{'score':>6} {'guard +':>7} " + " ".join(f"{k:>15}" for k in KINDS))
    for name, runs in report.items():
        for mode, t in runs.items():
            per = t["input_tokens"] / t["conversations"] if t["conversations"] else 0
            line = (f"{name:14} {mode:7} {t['conversations']:>4} {t['requests']:>4} "
                    f"{t['input_tokens']:>12,} {t['chars_over_4']:>8,} {per:>11,.0f}")
            if mode != "hermes":
                line += (f" {t['score'] / max(t['conversations'], 1):>6.3f} {t['guard_added']:>7} "
                         + " ".join(f"{t[k][0]:>7}/{t[k][1]:<7}" for k in KINDS))
            print(line)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
