"""compression.mode=fit: training data under a token target, fewest turns summarized, the rest verbatim.

Synthetic Hermes trajectories show each rule; the Hermes-format set built from the shared real logs is
compacted by Hermes' own trajectory_compressor and by ours at 16K, and judged by one yardstick.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.bench_fit_mode import judge, new_summaries, value_tokens
from benchmarks.hermes_trajectories import build
from hermes_pipeline.testing.fake_provider import FakeProvider
from testkit.env import CORPUS, ROOT, read_jsonl, run_cli, shared

SCALE = "model.token_scale=1.0"     # the target in cl100k tokens


def words(n: int, word: str) -> str:
    return " ".join([word] * n)


def call(name: str, i: int) -> str:
    return f'<think>\n</think>\n<tool_call>\n{{"name": "{name}", "arguments": {{"n": {i}}}}}\n</tool_call>'


def response(i: int, size: int) -> str:
    body = json.dumps({"tool_call_id": f"c{i}", "name": "read", "content": words(size, f"data{i}")})
    return f"<tool_response>\n{body}\n</tool_response>"


def agent_run(pairs: int, size: int = 500) -> list[dict]:
    """system, task, then `pairs` tool calls with large results, then the answer."""
    turns = [{"from": "system", "value": "You are a function calling AI model."},
             {"from": "human", "value": "Read every file and report."}]
    for i in range(pairs):
        turns += [{"from": "gpt", "value": call("read", i)}, {"from": "tool", "value": response(i, size)}]
    return turns + [{"from": "gpt", "value": "<think>\n</think>\nAll files read: done."}]


def chat(exchanges: int, size: int = 300) -> list[dict]:
    """A dialogue: the head's call, then human/gpt exchanges with no tools."""
    turns = agent_run(1, size=50)[:-1]
    for i in range(exchanges):
        turns += [{"from": "human", "value": f"question {i} " + words(size, "ask")},
                  {"from": "gpt", "value": f"answer {i} " + words(size, "say")}]
    return turns


def fit(tmp_path, trajectories: list[list[dict]], target: int, *overrides: str):
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"conversations": t}) + "\n" for t in trajectories))
    run_dir = tmp_path / "run"
    result = run_cli(run_dir, f"input={source}", "compression.mode=fit", f"compression.target_tokens={target}",
                     SCALE, *overrides)
    assert result.returncode == 0, result.stderr
    outputs = [r["conversations"] for r in read_jsonl(run_dir / "transcripts" / "in.jsonl")]
    return read_jsonl(run_dir / "manifest.jsonl"), outputs


def test_the_fewest_turns_are_summarized_and_every_other_turn_is_kept_as_it_was(tmp_path):
    before = agent_run(12)
    pair = value_tokens(before[4:6])        # one call and its ~1,000-token result
    # summarizing 2 pairs leaves it ~half a pair over (the summary takes ~250); 3 pairs bring it under
    target = value_tokens(before) - int(2.5 * pair) + 300
    (row,), (after,) = fit(tmp_path, [before], target)
    assert row["status"] == "compacted" and row["trigger"] == "target" and row["fits"]
    (s,) = new_summaries(before, after)
    summarized = len(before) - len(after) + 1
    assert summarized == 6 and value_tokens(after) <= target
    assert after[:s] == before[:s] and after[s + 1:] == before[s + summarized:]      # byte for byte
    assert after[s]["from"] == "human" and after[s - 1]["from"] == "tool" and after[s + 1]["from"] == "gpt"
    assert "[Old tool output cleared" not in json.dumps(after) and "compacted into a summary" not in after[0]["value"]


def test_the_summary_takes_the_role_that_keeps_the_order(tmp_path):
    """When the turn after the span is the human's, the summary is a gpt turn: never two of a role in a row."""
    before = chat(10)
    (row,), (after,) = fit(tmp_path, [before], 3000)
    (s,) = new_summaries(before, after)
    assert row["fits"] and after[s + 1]["from"] == "human" and after[s]["from"] == "gpt"
    froms = [t["from"] for t in after]
    assert all(a != b for a, b in zip(froms, froms[1:]))


def test_under_the_target_nothing_changes_and_over_it_says_why(tmp_path):
    small, covered, big_tail = agent_run(2, size=50), agent_run(3, size=3000), agent_run(6, size=3000)
    rows, outputs = fit(tmp_path, [small, covered, big_tail], 4000, "compression.target_protect_last_n=6")
    assert rows[0]["status"] == "unchanged" and rows[0]["noop_reason"].startswith("under the target")
    assert outputs[0] == small
    assert rows[1]["fits"] is False and "cover the whole conversation" in rows[1]["fit_reason"]
    assert outputs[1] == covered
    # what may be summarized is, and still the last 6 messages alone are over the target
    assert rows[2]["status"] == "compacted" and rows[2]["fits"] is False
    assert "the head and the last 7 messages are kept verbatim" in rows[2]["fit_reason"]   # 6, from a turn start


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """The shared logs as Hermes trajectories, compacted at 16K by Hermes' compressor and by ours."""
    shared(CORPUS)
    work = tmp_path_factory.mktemp("fit-mode")
    source = build(work / "trajectories.jsonl")
    inputs = read_jsonl(source)
    with FakeProvider() as fake:
        hermes = subprocess.run([sys.executable, "-m", "benchmarks.hermes_compressor", str(source),
                                 str(work / "hermes.jsonl"), "16000", fake.openai_base_url],
                                cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert hermes.returncode == 0, hermes.stderr[-2000:]
    result = run_cli(work / "run", f"input={source}", "compression.mode=fit", "compression.target_tokens=16000",
                     SCALE, timeout=600)
    assert result.returncode == 0, result.stderr
    ours = read_jsonl(work / "run" / "transcripts" / "trajectories.jsonl")
    return (inputs, judge(inputs, read_jsonl(work / "hermes.jsonl"), 16000), judge(inputs, ours, 16000),
            read_jsonl(work / "run" / "manifest.jsonl"))


def test_at_16k_none_is_over_the_target_that_hermes_brings_under_it(compared):
    inputs, hermes, ours, _ = compared
    assert len(inputs) >= 200 and ours["over_before"] > 0        # there is something to fit
    left_over = [mine["id"] for mine, theirs in zip(ours["rows"], hermes["rows"])
                 if mine["after"] > 16000 >= theirs["after"]]
    assert left_over == []
    assert ours["over_after"] <= hermes["over_after"]


def test_at_16k_no_kept_turn_is_altered_and_the_order_stays_valid(compared):
    _, hermes, ours, rows = compared
    assert ours["altered_turns"] == 0 and ours["order_broken"] == 0
    assert ours["compacted"] == sum(r["status"] == "compacted" for r in rows) > 0
    assert hermes["altered_turns"] == hermes["compacted"]    # Hermes appends a notice to the system turn


def test_fit_mode_without_a_summary_stage_is_a_config_error(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"conversations": agent_run(2)}) + "\n")
    result = run_cli(tmp_path / "run", f"input={source}", "compression.mode=fit", "pipeline=mask_only")
    assert result.returncode == 1 and "compression.mode=fit needs a summarize stage" in result.stderr
