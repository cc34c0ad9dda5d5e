"""Requests out, answers in: a run's model requests as files, so that any model anywhere can answer them.

`summarizer.batch.export_to=FILE` writes the requests no answer is known for (summaries, the exam's) as
the provider's own batch input JSONL (Anthropic Message Batches: {"custom_id", "params"}; OpenAI Batch:
{"custom_id", "method", "url", "body"}), and the run stops there. Whoever answers them writes the
provider's batch results JSONL (Anthropic: {"custom_id", "result": {"type": "succeeded", "message"}};
OpenAI: {"custom_id", "response": {"status_code": 200, "body"}}): the provider's own batch API does, so
does a person or another machine. `summarizer.batch.import_from=[FILE, ...]` reads those answers first:
each goes into the request cache when its request comes (read by that request's reader, billed once at the
batch price), so the run, given the same answers, writes the same bytes. The custom_id is the request's
cache key: an answer can only answer the request it was made for.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from hermes_pipeline.summarizers.base import SummarizerFatalError


def write_requests(path: str | Path, calls, items: dict[str, dict]) -> int:
    """`items` (cache key -> request) as the provider's batch input, replacing the file whole."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.part")
    with open(part, "w", encoding="utf-8") as handle:
        for key, params in items.items():
            handle.write(json.dumps(calls.request_line(key, params), ensure_ascii=False) + "\n")
    os.replace(part, path)
    return len(items)


def read_results(paths, calls) -> dict:
    """Cache key -> ItemOutcome of every answer in the results files; a line that is not one is an error
    naming its file and line (nothing is run on answers half read)."""
    found = {}
    for name in paths:
        path = Path(str(name)).expanduser()
        if not path.is_file():
            raise SummarizerFatalError(f"summarizer.batch.import_from: {path}: no such file")
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                    if not isinstance(value, dict):
                        raise ValueError("a line must be a JSON object")
                    outcome = calls.result_outcome(value)
                except ValueError as error:
                    raise SummarizerFatalError(f"summarizer.batch.import_from: {path}:{number}: {error}") from None
                found[outcome.key] = outcome
    return found
