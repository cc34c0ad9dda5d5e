"""Baseline: read, parse and re-write the same JSONL files, nothing else."""
import sys
from pathlib import Path

import orjson

source, target = Path(sys.argv[1]), Path(sys.argv[2])
target.mkdir(parents=True, exist_ok=True)
files = [(source, Path(source.name))] if source.is_file() else [
    (p, p.relative_to(source)) for p in sorted(source.rglob("*.jsonl"))]
for path, relative in files:
    (target / relative).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "rb") as reader, open(target / relative, "wb") as writer:
        for line in reader:
            if line.strip():
                try:
                    writer.write(orjson.dumps(orjson.loads(line)) + b"\n")
                except orjson.JSONDecodeError:     # real archives hold broken lines: copied as they are
                    writer.write(line)
