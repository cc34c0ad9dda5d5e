"""Baseline: read, parse and re-write the same JSONL files, nothing else."""
import sys
from pathlib import Path

import orjson

source, target = Path(sys.argv[1]), Path(sys.argv[2])
target.mkdir(parents=True, exist_ok=True)
files = [source] if source.is_file() else sorted(source.rglob("*.jsonl"))
for path in files:
    with open(path, "rb") as reader, open(target / path.name, "wb") as writer:
        for line in reader:
            if line.strip():
                writer.write(orjson.dumps(orjson.loads(line)) + b"\n")
