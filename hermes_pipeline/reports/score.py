"""`hermes-pipeline-score ORIGINAL COMPACTED [--json]`: how much of a conversation a compaction keeps.

ORIGINAL is the conversation as it was (any format the pipeline reads), COMPACTED what a compactor made
of it: ours, another tool's, or an agent's own (a Claude Code or pi log that runs on past the agent's own
compaction is read as the conversation the agent resumed with). The score is the run's `quality.score`
(analysis/recall.py), the share of the conversation's facts the compacted one still holds; files of
several conversations are paired by id. Exit 1 on a file that cannot be read or paired.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from hermes_pipeline.analysis.recall import recall, shown_facts
from hermes_pipeline.analysis.secret_scan import SecretScan
from hermes_pipeline.config.command_line import UsageParser
from hermes_pipeline.formats.file_conversations import NotFound, read_conversations
from hermes_pipeline.inputs.repair import repair_tool_pairing


def pairs(original: Path, compacted: Path) -> list[tuple]:
    for path in (original, compacted):
        if not path.is_file():
            raise NotFound(f"{path}: no such file")
    before = [repair_tool_pairing(c) for c in read_conversations(original, None)]
    after = read_conversations(compacted, None)
    if not before or not after:
        raise NotFound(f"{original if not before else compacted}: no conversation in it")
    if len(before) == 1 and len(after) == 1:
        return [(before[0], after[0])]
    by_id = {c.id: c for c in after}
    found = [(b, by_id[b.id]) for b in before if b.id in by_id]
    if not found:
        raise NotFound(f"no conversation of {original} has an id found in {compacted}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = UsageParser(prog="hermes-pipeline-score", description=__doc__.splitlines()[0])
    parser.add_argument("original", type=Path, help="the conversation as it was")
    parser.add_argument("compacted", type=Path, help="what a compaction made of it")
    parser.add_argument("--json", action="store_true", help='print {"score", "per_kind", ...} (one per line)')
    args = parser.parse_args(argv)
    try:
        found = pairs(args.original, args.compacted)
    except (NotFound, OSError) as error:
        print(f"hermes-pipeline-score: {error}", file=sys.stderr)
        return 1
    for before, after in found:
        result = recall(before.messages, after.messages)
        if args.json:
            print(json.dumps({"id": before.id, "score": result["score"], "per_kind": result["per_kind"],
                              "facts": result["facts"],
                              "missed": shown_facts(result["missed"], SecretScan(before.messages))}))
        else:
            kinds = " · ".join(f"{k} {v:.2f}" for k, v in result["per_kind"].items())
            score = "–" if result["score"] is None else f"{result['score']:.3f}"
            print(f"{before.id}: score {score} (facts kept {result['facts']['kept']}/{result['facts']['total']})"
                  + (f" · {kinds}" if kinds else ""))
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
