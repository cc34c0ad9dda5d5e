"""The engine on long, realistic coding sessions (generated) and on re-compaction."""
import json

import pytest

from hermes_pipeline.transcript import Conversation, is_summary_message, message_text
from testkit.builders import assistant, calls, engine_for, result, system, user
from testkit.synth import make_session
from testkit.validity import contains, problems

SEEDS = range(1, 9)


@pytest.fixture(scope="module")
def default_engine():
    return engine_for(context_length=200_000, protect_last_n=20)


@pytest.fixture(scope="module")
def sessions():
    return [make_session(seed, n_messages=300 + 25 * seed, target_tokens=100_000 + 8_000 * seed) for seed in SEEDS]


@pytest.fixture(scope="module")
def outcomes(default_engine, sessions):
    return [default_engine.compress(Conversation(record["id"], record["messages"], "synth:1")) for record, _ in sessions]


def test_sessions_over_the_threshold_compact_below_half_the_context(sessions, outcomes):
    for (record, _), compaction in zip(sessions, outcomes):
        assert compaction.outcome.tokens_before >= 100_000
        assert compaction.outcome.compacted and compaction.outcome.trigger == "agent"
        assert compaction.outcome.tokens_after < 100_000, record["id"]


def test_head_tail_pairing_and_roles_hold(sessions, outcomes):
    for (record, _), compaction in zip(sessions, outcomes):
        assert problems(record["messages"], compaction.messages) == [], record["id"]
        assert compaction.messages[1:3] == record["messages"][1:3]


def test_at_least_95_percent_of_planted_facts_survive(sessions, outcomes):
    total = kept = 0
    for (record, facts), compaction in zip(sessions, outcomes):
        total += len(facts)
        kept += sum(contains(compaction.messages, fact.text) for fact in facts)
    assert total >= 40 * len(SEEDS)
    assert kept / total >= 0.95, f"{kept}/{total}"


def test_summary_stays_within_its_budget(outcomes):
    for compaction in outcomes:
        assert 0 < compaction.outcome.summary_tokens <= 10_000


def test_under_the_threshold_nothing_changes(default_engine):
    messages = [system(), user("hi"), assistant("hello")] * 10
    compaction = default_engine.compress(Conversation("small", messages, "t:1"))
    assert compaction.outcome.trigger == "none" and compaction.messages is messages


def test_hygiene_fires_on_recorded_usage_alone():
    engine = engine_for(context_length=200_000, protect_last_n=4)
    filler = "word " * 2000   # ~2K tokens a message: 46K in all, under the 100K agent threshold
    messages = [system(), user("go"), assistant("ok")] + [user(f"q{i} {filler}") if i % 2 == 0 else
                                                           assistant(f"a{i} {filler}") for i in range(20)]
    small = Conversation("c", messages, "t:1", recorded_prompt_tokens=None)
    assert engine.compress(small).outcome.trigger == "none"
    reported = Conversation("c", messages, "t:1", recorded_prompt_tokens=180_000)
    compaction = engine.compress(reported)
    assert compaction.outcome.trigger == "hygiene" and compaction.outcome.compacted


def test_recompaction_updates_the_summary_instead_of_stacking(default_engine, sessions):
    record, facts = sessions[0]
    first = default_engine.compress(Conversation("s", record["messages"], "t:1")).messages
    grown, _ = make_session(99, n_messages=300, target_tokens=110_000)
    continued = first + [m for m in grown["messages"][3:] if True]
    second = default_engine.compress(Conversation("s", continued, "t:1"))
    assert second.outcome.compacted
    summaries = [m for m in second.messages if is_summary_message(m)]
    assert len(summaries) == 1
    assert problems(continued, second.messages) == []
    early = [f for f in facts if f.kind in ("user_rule", "user_value", "path_written")]
    survived = sum(contains(second.messages, f.text) for f in early)
    assert survived / len(early) >= 0.9
    system_text = message_text(second.messages[0])
    assert system_text.count("compacted into a summary") == 1   # the note is added once


def test_compaction_is_deterministic(default_engine, sessions):
    record, _ = sessions[1]
    one = default_engine.compress(Conversation("s", record["messages"], "t:1")).messages
    two = default_engine.compress(Conversation("s", record["messages"], "t:1")).messages
    assert json.dumps(one) == json.dumps(two)


def test_secrets_in_the_middle_never_reach_the_summary():
    engine = engine_for(context_length=4000, protect_last_n=2)
    secret = "sk-ant-api03-" + "a1B2c3D4" * 6
    messages = [system(), user("go"), assistant("ok"),
                user(f"Use this key: {secret} and password=hunter2hunter2"),
                calls(("c", "bash", {"command": "curl https://bob:s3cr3tpass@example.com/x"})),
                result("c", "x " * 3000), assistant("done"), user("thanks"), assistant("bye")]
    compaction = engine.compress(Conversation("c", messages, "t:1"))
    summary = next(message_text(m) for m in compaction.messages if is_summary_message(m))
    assert secret not in summary and "hunter2hunter2" not in summary and "s3cr3tpass" not in summary
    assert "[REDACTED]" in summary
