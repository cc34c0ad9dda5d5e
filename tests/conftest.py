import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("HERMES_CORPUS", ROOT.parent / "shared" / "corpus"))
TAU_BENCH = CORPUS / "tau-bench" / "gpt-4o-airline.jsonl"

sys.path.insert(0, str(Path(__file__).resolve().parent))


def read_jsonl(path: Path) -> list:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def run_cli(run_dir: Path, *overrides: str, env: dict | None = None, timeout: int = 300):
    """The real command line, in a subprocess, writing its run folder to run_dir."""
    full_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full_env.update(env or {})
    command = [sys.executable, "-m", "hermes_pipeline", f"hydra.run.dir={run_dir}", "progress=log", *overrides]
    return subprocess.run(command, capture_output=True, text=True, env=full_env, cwd=ROOT, timeout=timeout)


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.exists():
        pytest.fail(f"the shared corpus is missing at {CORPUS}")
    return CORPUS
