"""Answer a requests file by hand: a person, or a model without an API (another session), is the model.

    python -m benchmarks.answer_by_hand list REQUESTS                 # one line per request: its id, size
    python -m benchmarks.answer_by_hand show REQUESTS N [--out FILE]  # request N's instructions and user turn
    python -m benchmarks.answer_by_hand answer REQUESTS N TEXT_FILE RESULTS   # its reply, appended to RESULTS

REQUESTS is what `summarizer.batch.export_to` or benchmarks.bench_exam wrote (Anthropic Message Batches or
OpenAI Batch input JSONL); RESULTS is the provider's batch output JSONL, which `summarizer.batch.import_from`
(or bench_exam) reads back. The reply goes in as it was written, byte for byte.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def requests(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def parts(line: dict) -> tuple[str, str]:
    """(instructions, user turn) of one requests line, either provider's."""
    body = line.get("params") or line.get("body") or {}
    if "params" in line:
        system = "".join(b.get("text", "") for b in body.get("system") or []) if isinstance(body.get("system"), list) \
            else str(body.get("system") or "")
        users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    else:
        system = "\n".join(m["content"] for m in body.get("messages", []) if m.get("role") == "system")
        users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    return system, "\n\n".join(u if isinstance(u, str) else json.dumps(u) for u in users)


def result_line(line: dict, text: str) -> dict:
    if "params" in line:
        return {"custom_id": line["custom_id"], "result": {"type": "succeeded", "message": {
            "type": "message", "role": "assistant", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 0, "output_tokens": 0}}}}
    return {"custom_id": line["custom_id"], "error": None, "response": {"status_code": 200, "body": {
        "object": "chat.completion", "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    listing = sub.add_parser("list")
    listing.add_argument("requests", type=Path)
    show = sub.add_parser("show")
    show.add_argument("requests", type=Path)
    show.add_argument("n", type=int)
    show.add_argument("--out", type=Path)
    answer = sub.add_parser("answer")
    answer.add_argument("requests", type=Path)
    answer.add_argument("n", type=int)
    answer.add_argument("text", type=Path)
    answer.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    lines = requests(args.requests)
    if args.what == "list":
        for n, line in enumerate(lines):
            system, user = parts(line)
            print(f"{n}\t{line['custom_id'][:16]}\t{system.splitlines()[0][:60] if system else ''}\t{len(user):,} chars")
        return 0
    line = lines[args.n]
    if args.what == "show":
        system, user = parts(line)
        text = f"===== INSTRUCTIONS =====\n{system}\n\n===== USER =====\n{user}\n"
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        return 0
    with open(args.results, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(result_line(line, args.text.read_text(encoding="utf-8"))) + "\n")
    print(f"request {args.n} answered in {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
