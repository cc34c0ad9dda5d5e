"""compression.summary_context_share / summary_ceiling: the summary's budget, as the CLI writes and bills it."""
import json

from testkit.env import LONG_SESSIONS, run_cli, shared


def run(tmp_path, *overrides):
    log = shared(LONG_SESSIONS / "vsla-claude-sessions" / "d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl")
    run_dir = tmp_path / "-".join(overrides).replace("=", "_") if overrides else tmp_path / "default"
    result = run_cli(run_dir, f"input={log}", "model.context_length=32000", "progress=none", *overrides)
    assert result.returncode == 0, result.stderr
    row = json.loads((run_dir / "manifest.jsonl").read_text().splitlines()[0])
    return row, json.loads((run_dir / "summary.json").read_text())["replay"]


def test_a_larger_share_of_a_small_context_buys_a_larger_summary_and_the_bill_says_what_it_costs(tmp_path):
    default_row, default_bill = run(tmp_path)
    row, bill = run(tmp_path, "compression.summary_context_share=0.1")
    # the 2,000-token floor (5% of 32K would be 1,600), then 10% of 32K
    assert 1_800 <= default_row["summary_tokens"] <= 2_000 < row["summary_tokens"] <= 3_200
    assert bill["summary_output_tokens"] > default_bill["summary_output_tokens"]
    assert bill["cost_usd"] > default_bill["cost_usd"]
    capped, _ = run(tmp_path, "compression.summary_context_share=0.1", "compression.summary_ceiling=1000")
    assert capped["summary_tokens"] <= 1_000
