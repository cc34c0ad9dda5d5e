"""Fresh Codex rollouts, recorded now by the real Codex CLI, read, compacted and resumed: the issue's checks.

    python -m benchmarks.bench_codex            # three sessions, 1-5 MB each, a few minutes
    python -m benchmarks.bench_codex --quick    # one

Each session is recorded against the fake Responses API (testkit/codex_cli.py),
Codex compacting on its own (a low auto-compact limit), and ends on a long history
(the limit lifted for its last prompt). Per rollout: its size and Codex's own
compactions, then the pipeline's row (compacted at model.context_length=32000),
tokens_before against the rollout's last token_count (the difference is the tool
schemas, which a rollout does not store), calls without outputs (and outputs
without calls) in the written compaction, and whether Codex resumed it with
exactly that history. Needs `make agents`.
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from hermes_pipeline.formats.codex.rollout import replay
from hermes_pipeline.testing.fake_responses import FakeResponses
from testkit.codex_cli import CODEX, record_session, sent_history
from testkit.env import read_jsonl, run_cli

SESSIONS = (   # prompts, calls a turn, lines a command prints, Codex's auto-compact limit
    (8, 8, 1500, 40000),
    (10, 6, 2500, 60000),
    (12, 10, 1000, 30000),
)


def unpaired(items: list[dict]) -> int:
    calls = {i["call_id"] for i in items if i.get("type") in ("function_call", "custom_tool_call")}
    outputs = {i["call_id"] for i in items if i.get("type") in ("function_call_output", "custom_tool_call_output")}
    return len(calls ^ outputs)


def one(folder: Path, prompts: int, calls: int, size: int, limit: int) -> dict:
    asks = [f"Task {i}: inspect the workspace and report on part {i}" for i in range(prompts)]
    with FakeResponses(calls_per_turn=calls, output_size=size) as fake:
        rollout = record_session(folder / "record", fake, asks, limit, last_prompts=("The long report",))
        source = folder / "in" / rollout.name
        source.parent.mkdir(parents=True)
        shutil.copyfile(rollout, source)
        result = run_cli(folder / "run", f"input={source}", "model.context_length=32000", "quiet=true")
        row = read_jsonl(folder / "run" / "manifest.jsonl")[0]
        written = folder / "run" / "transcripts" / rollout.name
        last = json.loads(written.read_text().splitlines()[-1])
        replacement = last["payload"]["replacement_history"] if last["type"] == "compacted" else []
        resumed = folder / "resume" / rollout.name
        resumed.parent.mkdir()
        shutil.copyfile(written, resumed)
        sent = sent_history(folder / "codex", fake, resumed)
    return {"MB": round(rollout.stat().st_size / 1e6, 2), "codex compactions": replay(read_jsonl(rollout)).compactions,
            "exit": result.returncode, "status": row["status"], "tokens_before": row["tokens_before"],
            "token_count": row["tokens_recorded"],
            "difference": f"{(row['tokens_before'] - row['tokens_recorded']) / row['tokens_recorded']:+.1%}",
            "tokens_after": row["tokens_after"], "unpaired calls": unpaired(replacement),
            "resumed as written": [(i.get("type"), i.get("call_id")) for i in sent]
            == [(i.get("type"), i.get("call_id")) for i in replacement]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one session")
    args = parser.parse_args()
    if not CODEX.exists():
        raise SystemExit(f"{CODEX} is absent: run `make agents`")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, setting in enumerate(SESSIONS[:1] if args.quick else SESSIONS):
            rows.append(one(Path(tmp) / str(n), *setting))
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
