"""Every output fits the safety net's share of the context, or says why (issue 19, engine/context_fit.py).

Runs the real command line over the shared corpus and the long sessions at each
context and reads the manifests: outputs over hygiene.threshold (85%) of the
context by the measure of docs/compaction.md (exact cl100k x model.token_scale), rows marked
`fits: false` and their reasons, and what the fit step did (its stats, added up).

    .venv/bin/python -m benchmarks.bench_fit [--contexts 4000,8000,16000,32000,64000] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from benchmarks.measure import WORK, cli
from testkit.env import CORPUS, LONG_SESSIONS

SHARE, SCALE = 0.85, 1.20      # hygiene.threshold and the default model's token_scale
COLLECTIONS = {"corpus": CORPUS, "long sessions": LONG_SESSIONS}


def measure(context: int) -> dict:
    rows = []
    for name, root in COLLECTIONS.items():
        run_dir = WORK / "fit" / f"{name.replace(' ', '-')}-{context}"
        cli(run_dir, f"input={root}", f"model.context_length={context}")
        rows += [{**r, "collection": name} for r in map(json.loads, (run_dir / "manifest.jsonl").open())
                 if r["status"] in ("compacted", "unchanged")]
    limit = SHARE * context
    over = [r for r in rows if r["tokens_after"] * SCALE > limit]
    actions: Counter = Counter()
    for row in rows:
        actions.update({k: v for k, v in row["stats"].items() if k.startswith("fit_")})
    return {"context": context, "conversations": len(rows), "compacted": sum(r["status"] == "compacted" for r in rows),
            "over": len(over), "over_unmarked": sum(r["fits"] is not False for r in over),
            "fits_false": [{"source": r["source"], "reason": r["fit_reason"]} for r in rows if r["fits"] is False],
            "largest_share": round(max(r["tokens_after"] * SCALE / context for r in rows), 3),
            "actions": dict(actions)}


def table(found: list[dict]) -> str:
    lines = ["| context | conversations | compacted | over 85% | of them without fits: false "
             "| largest output / context | fit step (summed stats) |", "|---|---|---|---|---|---|---|"]
    for f in found:
        actions = ", ".join(f"{k[4:]} {v}" for k, v in sorted(f["actions"].items())) or "-"
        lines.append(f"| {f['context']:,} | {f['conversations']} | {f['compacted']} | {f['over']} | "
                     f"{f['over_unmarked']} | {f['largest_share']} | {actions} |")
    for f in found:
        for row in f["fits_false"]:
            lines.append(f"- {f['context']:,}: {row['source']}: {row['reason']}")
    return "\n".join(lines)


def figures_main(doc: str, option: str, default: str, run, table_of, argv: list[str] | None) -> int:
    """The command line of a fit benchmark: a comma-separated list of sizes, a table, the figures as JSON."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(f"--{option}", default=default)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    found = run([int(n) for n in getattr(args, option).split(",")])
    print(table_of(found))
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    return figures_main(__doc__, "contexts", "4000,8000,16000,32000,64000",
                        lambda contexts: [measure(c) for c in contexts], table, argv)


if __name__ == "__main__":
    raise SystemExit(main())
