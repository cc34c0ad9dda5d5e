"""Quick checks of the synthetic session generator in testkit/synth.py."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from testkit import synth

TOOLS = {"read_file": {"path"}, "write_file": {"path", "content"}, "edit_file": {"path", "old", "new"},
         "bash": {"command"}, "grep": {"pattern", "path"}, "list_dir": {"path"}}
SEEDS = (1, 2, 3)


@lru_cache(maxsize=None)
def session(seed: int, n_messages: int = 400, target_tokens: int = 130_000):
    return synth.make_session(seed, n_messages=n_messages, target_tokens=target_tokens)


def visible(message: dict) -> str | None:
    """Role for the alternation check: tool rows and tool-call-only assistant rows don't count."""
    if message["role"] == "tool":
        return None
    if message["role"] == "assistant" and message.get("tool_calls") and not (message.get("content") or "").strip():
        return None
    return message["role"]


def test_deterministic_in_process():
    a, fa = synth.make_session(7)
    b, fb = synth.make_session(7)
    assert json.dumps(a) == json.dumps(b)
    assert fa == fb
    c, _ = synth.make_session(8)
    assert json.dumps(a) != json.dumps(c)


def test_cli_output_is_byte_identical_across_processes(tmp_path):
    expected = tmp_path / "expected.jsonl"
    results = synth.write_sessions(expected, [5], n_messages=120, target_tokens=30_000)
    assert [r[0] for r in results] == ["synth-5"]
    out = tmp_path / "cli.jsonl"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    proc = subprocess.run(
        [sys.executable, str(Path(synth.__file__)), str(out), "--count", "1", "--seed", "5",
         "--messages", "120", "--tokens", "30000"],
        capture_output=True, text=True, env=env, check=True)
    assert "conversations=1" in proc.stdout and "tokens=" in proc.stdout
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert digest(out) == digest(expected)
    record = json.loads(out.read_text().splitlines()[0])
    assert set(record) == {"id", "messages", "metadata"} and record["id"] == "synth-5"


@pytest.mark.parametrize("seed", SEEDS)
def test_roles_alternate_and_tool_calls_pair(seed):
    record, _ = session(seed)
    messages = record["messages"]
    assert messages[0]["role"] == "system"
    assert messages[1]["role"] == "user"
    assert messages[2]["role"] == "assistant" and not messages[2].get("tool_calls") and messages[2]["content"]
    last = messages[-1]
    assert last["role"] == "assistant" and not last.get("tool_calls") and last["content"].strip()

    roles = [r for r in (visible(m) for m in messages) if r in ("user", "assistant")]
    assert all(x != y for x, y in zip(roles, roles[1:]))

    i = 0
    while i < len(messages):
        m = messages[i]
        assert m["role"] != "tool", f"orphan tool result at {i}"
        calls = m.get("tool_calls") or []
        if calls:
            assert m["role"] == "assistant"
            ids = [c["id"] for c in calls]
            assert len(set(ids)) == len(ids)
            for k, call in enumerate(calls):
                assert call["type"] == "function" and call["id"].startswith("call_")
                args = json.loads(call["function"]["arguments"])
                assert TOOLS[call["function"]["name"]] <= set(args)
                result = messages[i + 1 + k]
                assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
                assert isinstance(result["content"], str) and result["content"]
            i += 1 + len(calls)
            assert i >= len(messages) or messages[i]["role"] != "tool"
        else:
            i += 1


@pytest.mark.parametrize("seed", SEEDS)
def test_shape_looks_like_a_real_session(seed):
    messages = session(seed)[0]["messages"]
    assert 1000 <= synth.message_tokens(messages[0]) <= 2000
    batches = [m["tool_calls"] for m in messages if m.get("tool_calls")]
    parallel = [b for b in batches if len(b) >= 2]
    assert len(parallel) >= 0.15 * len(batches) and max(len(b) for b in batches) <= 4
    ids = [c["id"] for b in batches for c in b]
    assert len(ids) > len(set(ids)), "some tool-call ids should be reused"
    assert {c["function"]["name"] for b in batches for c in b} == set(TOOLS)
    results = [m["content"] for m in messages if m["role"] == "tool"]
    lines = [r.count("\n") + 1 for r in results]
    assert sum(1 for r, n in zip(results, lines) if "test session starts" in r and 190 <= n <= 600) >= 3
    assert sum(1 for r, n in zip(results, lines) if r.startswith("     1\t") and 50 <= n <= 320) >= 10
    tail = messages[int(0.8 * len(messages)):]
    assert any(m.get("tool_calls") for m in tail)
    assert any(m["role"] == "user" for m in tail)
    assert any(m["role"] == "assistant" and not m.get("tool_calls") for m in tail)
    assert sum(1 for m in messages if m["role"] == "user") >= 20


@pytest.mark.parametrize("seed,n,tokens", [(1, 400, 130_000), (2, 400, 130_000), (3, 400, 130_000),
                                           (4, 200, 60_000), (5, 800, 250_000)])
def test_token_and_message_targets(seed, n, tokens):
    messages = session(seed, n, tokens)[0]["messages"]
    assert abs(len(messages) - n) <= 0.1 * n
    assert abs(synth.count_tokens(messages) - tokens) <= 0.1 * tokens


@pytest.mark.parametrize("seed", SEEDS)
def test_facts_are_verbatim_and_in_the_middle(seed):
    record, facts = session(seed)
    messages = record["messages"]
    n = len(messages)
    assert len(facts) >= 40
    assert {f.kind for f in facts} == set(synth.FACT_KINDS)
    assert len({f.text for f in facts}) == len(facts)
    lo, hi = int(synth.MID_LO * n), int(synth.MID_HI * n)
    texts = [synth.message_search_text(m) for m in messages]
    outside = "\n".join(texts[:lo] + texts[hi:])
    for f in facts:
        assert lo <= f.message_index < hi, f
        assert f.text in texts[f.message_index], f
        assert f.text not in outside, f
        m = messages[f.message_index]
        if f.kind in ("user_value", "user_rule"):
            assert m["role"] == "user"
        elif f.kind == "decision":
            assert m["role"] == "assistant" and f.text in m["content"]
        elif f.kind == "path_written":
            paths = [json.loads(c["function"]["arguments"])["path"] for c in m["tool_calls"]
                     if c["function"]["name"] in ("write_file", "edit_file")]
            assert f.text in paths
        else:
            assert m["role"] == "tool"
            log = m["content"].split("\n")
            assert f.text in log, "the error is a whole log line"
            where = log.index(f.text) / len(log)
            assert len(log) >= 150 and 0.2 <= where <= 0.8, (len(log), where)
    assert sum(f.kind == "user_rule" and f.text.endswith(".") for f in facts) >= 1
