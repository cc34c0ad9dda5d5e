"""Start-up imports only what the run uses: a run with the embedded summarizer loads no SDK.

A new interpreter runs the real command line on the bundled samples and reports, as it exits,
which modules it loaded. The SDKs (anthropic, openai, their HTTP stack), tenacity and the Hermes
engine's shims cost about 1.5 s of imports, and a run that calls no model has no use for them.
"""
from __future__ import annotations

import json
import subprocess
import sys

from testkit.env import ROOT

NOT_LOADED = ("anthropic", "openai", "httpx", "httpcore", "tenacity", "asyncio", "hermes_pipeline.engine.hermes",
              "hermes_pipeline.summarizers.llm.calls", "hermes_pipeline.summarizers.llm.anthropic",
              "hermes_pipeline.summarizers.llm.openai")

# The CLI as `python -m hermes_pipeline` runs it, with the loaded modules written out at exit
RUN_AND_LIST = """
import atexit, json, runpy, sys
listed = sys.argv[1]
atexit.register(lambda: open(listed, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["hermes_pipeline", *sys.argv[2:]]
runpy.run_module("hermes_pipeline", run_name="__main__")
"""


def loaded_by_a_run(tmp_path, *overrides: str) -> list[str]:
    listed = tmp_path / "modules.json"
    run = subprocess.run([sys.executable, "-c", RUN_AND_LIST, str(listed), f"hydra.run.dir={tmp_path / 'run'}",
                          "input=samples", "model.context_length=8000", "progress=none", "quiet=true", *overrides],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["statuses"]["compacted"] > 0      # the summarizer ran: its imports happened
    return json.loads(listed.read_text())


def sdk_modules(modules: list[str]) -> list[str]:
    return [m for m in modules if m in NOT_LOADED or m.split(".")[0] in NOT_LOADED]


def test_a_run_with_the_embedded_summarizer_imports_no_sdk(tmp_path):
    modules = loaded_by_a_run(tmp_path, "summarizer=extractive")
    assert "hermes_pipeline.summarizers.embedded.summarizer" in modules    # the list is the run's
    assert sdk_modules(modules) == []


def test_the_model_summarizer_modules_are_imported_when_one_is_configured(tmp_path):
    """The other side: the same check sees them when the run needs them (a dry run builds the Anthropic
    summarizer and calls no model, so even the SDK waits for a first call)."""
    modules = loaded_by_a_run(tmp_path, "summarizer=anthropic", "dry_run=true")
    assert {"tenacity", "hermes_pipeline.summarizers.llm.anthropic"} <= set(sdk_modules(modules))
    assert "anthropic" not in modules
