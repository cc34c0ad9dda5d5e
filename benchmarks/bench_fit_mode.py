"""Training data: `compression.mode=fit` against Hermes' own trajectory_compressor, in the same run.

On the Hermes-format trajectories built from the shared real logs
(benchmarks/hermes_trajectories.py), at each target: Hermes' compressor
(benchmarks/hermes_compressor.py) and ours, both summarizing through the same
fake provider on 127.0.0.1 (ours also with the embedded summarizer), each as
its own process. Every output is judged by one yardstick, Hermes' own: the
cl100k tokens of each turn's `value`.

    .venv/bin/python -m benchmarks.bench_fit_mode [--targets 16000,8000,4000] [--json OUT]

Per tool and target: trajectories over the target before and after, over the target where the other tool got
under it, kept turns altered (a turn that is not the summary and differs from the input's), trajectories whose
turn order breaks (two turns of a role in a row, or a tool turn not after a gpt turn, where the input had none),
tokens kept verbatim, summarizer input tokens (what the summary requests carried; for the embedded summarizer,
the turns it read), wall seconds and peak memory.
"""
from __future__ import annotations

import json
from pathlib import Path

from benchmarks.bench_fit import figures_main
from benchmarks.hermes_trajectories import build
from benchmarks.measure import DATA, PY, WORK, cached, child, cli, fresh
from hermes_pipeline.testing.fake_provider import FakeProvider
from hermes_pipeline.tokens import TokenCounter

COUNT = TokenCounter()
SET = DATA / "hermes-trajectories.jsonl"
OURS = ("compression.mode=fit", "model.token_scale=1.0")     # cl100k, as Hermes' compressor is given here


def value_tokens(turns: list[dict]) -> int:
    return sum(COUNT.count_text(t["value"]) for t in turns)


def new_summaries(before: list[dict], after: list[dict]) -> list[int]:
    """Where the output has a summary turn the input did not (an agent's own earlier summary may be in both)."""
    had = {t["value"] for t in before}
    return [i for i, t in enumerate(after)
            if t["value"].startswith(("[CONTEXT COMPACTION]", "[CONTEXT SUMMARY]:")) and t["value"] not in had]


def order_breaks(turns: list[dict]) -> int:
    froms = [t["from"] for t in turns]
    return sum(a == b or (b == "tool" and a != "gpt") for a, b in zip(froms, froms[1:]))


def altered(before: list[dict], after: list[dict]) -> int:
    """Kept turns that differ from the input's: the turns before the summary against the input's first ones,
    those after it against its last ones (everything, when there is no summary)."""
    marks = new_summaries(before, after)
    if not marks:
        return sum(a != b for a, b in zip(after, before)) + abs(len(after) - len(before))
    s = marks[0]
    head, tail = after[:s], after[s + 1:]
    differ = lambda pairs: sum(a["value"] != b["value"] or a["from"] != b["from"] for a, b in pairs)
    return differ(zip(head, before)) + differ(zip(tail, before[len(before) - len(tail):]))


def judge(inputs: list[dict], outputs: list[dict], target: int) -> dict:
    rows = []
    for entry, out in zip(inputs, outputs, strict=True):
        before, after = entry["conversations"], out["conversations"]
        summaries = new_summaries(before, after)
        rows.append({"id": entry["id"], "before": value_tokens(before), "after": value_tokens(after),
                     "kept": value_tokens([t for i, t in enumerate(after) if i not in summaries]),
                     "summary_turns": len(summaries), "altered": altered(before, after),
                     "order_broken": order_breaks(after) > order_breaks(before)})
    return {"target": target, "rows": rows,
            "over_before": sum(r["before"] > target for r in rows),
            "over_after": sum(r["after"] > target for r in rows),
            "compacted": sum(r["summary_turns"] > 0 for r in rows),
            "altered_turns": sum(r["altered"] for r in rows),
            "order_broken": sum(r["order_broken"] for r in rows),
            "tokens_kept": sum(r["kept"] for r in rows)}


def request_tokens(requests: list[dict]) -> int:
    """cl100k tokens of what the summary requests carried (every message's text)."""
    total = 0
    for request in requests:
        for message in request["body"].get("messages", []):
            content = message.get("content")
            total += COUNT.count_text(content if isinstance(content, str) else json.dumps(content))
    return total


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_hermes(fake, source: Path, target: int) -> dict:
    out = WORK / "fit-mode" / f"hermes-{target}.jsonl"
    fake.reset()
    run = child([PY, "-m", "benchmarks.hermes_compressor", source, out, target, fake.openai_base_url],
                log=out.with_suffix(".log"))
    return {"outputs": read(out), "wall": run.wall, "rss_mib": run.rss_mib, "calls": fake.request_count,
            "summarizer_input": request_tokens(fake.requests)}


def run_ours(fake, source: Path, target: int, summarizer: str) -> dict:
    run_dir = WORK / "fit-mode" / f"ours-{summarizer}-{target}"
    llm = () if summarizer == "extractive" else (
        "summarizer=openai", f"auxiliary.compression.base_url={fake.openai_base_url}",
        "summarizer.cache.enabled=false", "auxiliary.compression.model=gpt-4o-mini")
    fake.reset()
    run = cli(run_dir, f"input={source}", *OURS, f"compression.target_tokens={target}", *llm,
              env={"OPENAI_API_KEY": "local"})
    rows = read(run_dir / "manifest.jsonl")
    if summarizer == "extractive":      # it read the turns it summarized: the input's tokens less the kept ones
        read_tokens = None
    else:
        read_tokens = request_tokens(fake.requests)
    return {"outputs": read(run_dir / "transcripts" / source.name), "wall": run.wall, "rss_mib": run.rss_mib,
            "calls": fake.request_count, "summarizer_input": read_tokens, "rows": rows,
            "fits_false": sum(r.get("fits") is False for r in rows)}


def compare(targets: list[int]) -> dict:
    source = cached(SET, build, "hermes-trajectories v1: shared corpus + long sessions, convert_to_trajectory_format")
    inputs = read(source)
    fresh(WORK / "fit-mode")
    found = {"trajectories": len(inputs), "set": str(source), "targets": {}}
    with FakeProvider() as fake:
        for target in targets:
            tools = {"hermes": run_hermes(fake, source, target),
                     "ours (fake LLM)": run_ours(fake, source, target, "openai"),
                     "ours (embedded)": run_ours(fake, source, target, "extractive")}
            judged = {}
            for name, result in tools.items():
                verdict = judge(inputs, result.pop("outputs"), target)
                if result["summarizer_input"] is None:
                    verdict_rows = [r for r in verdict["rows"] if r["summary_turns"]]
                    result["summarizer_input"] = sum(r["before"] - r["kept"] for r in verdict_rows)
                result.pop("rows", None)
                judged[name] = {**result, **verdict}
            for name, verdict in judged.items():
                others = [v for n, v in judged.items() if n != name]
                verdict["over_where_another_fits"] = sum(
                    mine["after"] > target and any(o["rows"][i]["after"] <= target for o in others)
                    for i, mine in enumerate(verdict["rows"]))
            found["targets"][target] = judged
    return found


def table(found: dict) -> str:
    lines = [f"{found['trajectories']} Hermes-format trajectories ({found['set']}); tokens: cl100k of each turn's "
             "value", "",
             "| target | tool | over before | over after | over where another fits | compacted | kept turns altered "
             "| order broken | tokens kept | summary calls | summarizer input tokens | wall s | peak MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for target, judged in found["targets"].items():
        for name, v in judged.items():
            lines.append(f"| {int(target):,} | {name} | {v['over_before']} | {v['over_after']} | "
                         f"{v['over_where_another_fits']} | {v['compacted']} | {v['altered_turns']} | "
                         f"{v['order_broken']} | {v['tokens_kept']:,} | {v['calls']} | {v['summarizer_input']:,} | "
                         f"{v['wall']:.1f} | {v['rss_mib']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return figures_main(__doc__, "targets", "16000,8000,4000", compare, table, argv)


if __name__ == "__main__":
    raise SystemExit(main())
