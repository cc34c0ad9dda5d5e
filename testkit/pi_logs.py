"""pi session logs of the first format (version 1), made from a real version 3 log.

Version 1 (pi-mono's session migration code shows it) had no entry ids: the log
is one line after another, the header has no `version`, and a compaction names
its first kept entry by its index among the file's entries, the header counted
(`firstKeptEntryIndex`). The branch a version 3 log resumes is linear, so it
is written that way: the same entries, without ids, the compaction's id reference
turned into that index. No real version 1 log is public that we could keep here.
"""
from __future__ import annotations

import json
from pathlib import Path


def version_1_of(path: Path, out: Path) -> Path:
    values = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            values.append(json.loads(line))
        except ValueError:
            continue            # a broken line: pi never reads it either
    header = next(v for v in values if v.get("type") == "session")
    by_id = {v["id"]: v for v in values if isinstance(v.get("id"), str) and v.get("type") != "session"}
    branch, entry = [], values[-1]
    while entry is not None:    # from the last entry back to the root, as pi walks it
        branch.append(entry)
        entry = by_id.get(entry.get("parentId"))
    branch.reverse()
    lines = [{k: v for k, v in header.items() if k != "version"}]
    position = {id(v): i + 1 for i, v in enumerate(branch)}
    for value in branch:
        entry = {k: v for k, v in value.items() if k not in ("id", "parentId")}
        if entry.get("type") == "compaction" and "firstKeptEntryId" in entry:
            kept = by_id.get(entry.pop("firstKeptEntryId"))
            entry["firstKeptEntryIndex"] = position.get(id(kept), len(branch) + 1)
        lines.append(entry)
    out.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return out
