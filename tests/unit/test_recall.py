"""The built-in score (analysis/recall.py) on a real session: it tells settings apart, sees files dropped from
a summary, and scores a compaction whatever wrote it."""
from __future__ import annotations

from pathlib import Path

import pytest

from hermes_pipeline.analysis.recall import facts, recall, removed_messages
from hermes_pipeline.analysis.score import compaction_bounds
from hermes_pipeline.transcript import is_summary_message, message_text
from testkit.builders import assistant, calls, result, user
from testkit.sessions import make_engine, read_conversations

PORT = Path(__file__).resolve().parents[1] / "data" / "real" / "claude-reliability" / "python-to-rust-port.transcript.jsonl"


@pytest.fixture(scope="module")
def port():
    return read_conversations(PORT)[0]


def compacted_at(conversation, context: int):
    compaction = make_engine(context).compress(conversation)
    assert compaction.outcome.compacted
    return compaction


def test_a_larger_context_keeps_more_and_the_score_says_so(port):
    # the probes' score was 1.0 at each of these; a sweep over the context could not tell them apart
    # (past 12K this session's summary is no longer cut by its budget: a fifth of its middle fits)
    scores = [compacted_at(port, context).outcome.quality["score"] for context in (4000, 8000, 16000)]
    assert scores == sorted(scores) and scores[0] < scores[-1] < 1.0, scores
    assert scores[-1] - scores[0] > 0.1


def test_files_dropped_from_the_summary_lower_the_score(port):
    compaction = compacted_at(port, 32000)
    messages = list(compaction.messages)
    head_end, tail_start = compaction_bounds(port.messages, messages)
    whole = recall(port.messages, messages, range(head_end, tail_start))
    at = next(i for i, m in enumerate(messages) if is_summary_message(m))
    text = message_text(messages[at])
    without_files = "\n".join(line for line in text.splitlines() if ".rs" not in line and ".py" not in line)
    assert without_files != text
    messages[at] = {**messages[at], "content": without_files}
    dropped = recall(port.messages, messages, range(head_end, tail_start))
    assert dropped["score"] < whole["score"]
    assert any(dropped["per_kind"][kind] < share for kind, share in whole["per_kind"].items())
    assert dropped["facts"]["kept"] < whole["facts"]["kept"]


def test_head_and_tail_alone_score_below_the_same_with_the_summary(port):
    compaction = compacted_at(port, 16000)
    with_summary = compaction.outcome.quality["score"]
    without = [m for m in compaction.messages if not is_summary_message(m)]
    assert recall(port.messages, without)["score"] < with_summary


def test_which_messages_were_removed_is_found_when_no_span_is_known(port):
    # an agent's own compaction has no plan: the messages it does not hold as they were are the removed ones
    compaction = compacted_at(port, 16000)
    head_end, tail_start = compaction_bounds(port.messages, list(compaction.messages))
    inferred = removed_messages(port.messages, list(compaction.messages))
    span = set(range(head_end, tail_start))
    # a removed message whose text the output holds elsewhere (a second identical result) counts as held
    assert len(span & set(inferred)) >= 0.9 * len(span)
    assert removed_messages(port.messages, port.messages) == []


def test_facts_are_what_was_said_and_done_weighted_by_mentions():
    conversation = [
        user("please fix the parser in src/parse_args.py, keep the --strict flag"),
        calls(("c1", "bash", {"command": "pytest tests/test_parse.py"})),
        result("c1", "ERROR collecting tests/test_parse.py\nE   ImportError: cannot import name tokenize_v2"),
        assistant("The import of tokenize_v2 fails; src/parse_args.py still calls it."),
        user("ok"),
        assistant("Fixed src/parse_args.py."),
    ]
    found = {f.text: f for f in facts(conversation)}
    assert {"src/parse_args.py", "tests/test_parse.py", "tokenize_v2", "strict", "parser"} <= set(found)
    assert found["src/parse_args.py"].weight > found["tests/test_parse.py"].weight   # said three times, once
    assert "ImportError" not in found            # the tool's output alone: the work's material, not a fact
    assert found["src/parse_args.py"].kind == "continuation"    # the last turns name it
    assert found["parser"].kind == "decision"    # the user's own content word
    assert "please" not in found and "ok" not in found
