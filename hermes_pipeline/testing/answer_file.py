"""The fake model answering a requests file: `python -m hermes_pipeline.testing.answer_file REQUESTS RESULTS`.

REQUESTS is what `summarizer.batch.export_to` wrote (Anthropic Message Batches or OpenAI Batch input
JSONL); RESULTS gets the provider's batch output JSONL, each request answered as the fake provider
answers it (fake_summary.py: summaries; fake_exam.py: the exam's requests). A way to try the
export/import round trip offline, and what the tests finish an exported run with.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hermes_pipeline.testing.fake_summary import ANTHROPIC, OPENAI, approx_tokens, build_summary, parse_request


def answer_line(line: dict) -> dict:
    """The results line of one requests line, in the same provider's shape."""
    if "params" in line:        # Anthropic Message Batches
        text = build_summary(parse_request(line["params"], ANTHROPIC))
        usage = {"input_tokens": approx_tokens(len(json.dumps(line["params"]))), "output_tokens": approx_tokens(len(text))}
        return {"custom_id": line["custom_id"], "result": {"type": "succeeded", "message": {
            "type": "message", "role": "assistant", "model": line["params"].get("model"),
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": usage}}}
    body = line["body"]             # OpenAI Batch
    text = build_summary(parse_request(body, OPENAI))
    usage = {"prompt_tokens": approx_tokens(len(json.dumps(body))), "completion_tokens": approx_tokens(len(text))}
    return {"id": f"batch_req_{line['custom_id'][:12]}", "custom_id": line["custom_id"], "error": None,
            "response": {"status_code": 200, "body": {
                "object": "chat.completion", "model": body.get("model"), "usage": usage,
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}}}


def answer_file(requests: Path, results: Path) -> int:
    lines = [json.loads(line) for line in requests.read_text(encoding="utf-8").splitlines() if line.strip()]
    results.write_text("".join(json.dumps(answer_line(line)) + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", type=Path)
    parser.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    print(f"{answer_file(args.requests, args.results)} request(s) answered: {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
