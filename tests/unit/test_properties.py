"""Property tests over random conversations with tool groups."""
import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_pipeline.transcript import Conversation, pairing_problems
from testkit.builders import engine_for, run_in_process
from testkit.env import examples
from testkit.validity import problems

ENGINES = {}


def engine(context_length, protect_last_n):
    key = (context_length, protect_last_n)
    if key not in ENGINES:
        ENGINES[key] = engine_for(context_length=context_length, protect_last_n=protect_last_n)
    return ENGINES[key]


words = st.text(alphabet=string.ascii_letters + " .,:/_-0123456789\n日本", min_size=0, max_size=60)
sizes = st.sampled_from([1, 5, 40, 300])
ids = st.sampled_from(["call_a", "call_b", "call_c", "call_d"])   # few ids: repeats happen, as in real data


@st.composite
def turn(draw):
    kind = draw(st.sampled_from(["user", "assistant", "tools", "tools"]))
    text = draw(words) * draw(sizes)
    if kind != "tools":
        return [{"role": kind, "content": text}]
    n = draw(st.integers(1, 4))
    call_ids = draw(st.lists(ids, min_size=n, max_size=n, unique=True))
    call = {"role": "assistant", "content": draw(st.sampled_from([None, "", text[:80]])), "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": text[:200]})}}
        for i in call_ids]}
    results = [{"role": "tool", "tool_call_id": i, "content": draw(words) * draw(sizes)} for i in call_ids]
    return [call, *results]


@st.composite
def conversation(draw):
    messages = [{"role": "system", "content": "system " * draw(st.integers(1, 50))}] if draw(st.booleans()) else []
    for group in draw(st.lists(turn(), min_size=1, max_size=40)):
        messages.extend(group)
    return messages


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation(), st.sampled_from([1000, 2000, 4000]), st.integers(1, 8))
def test_compaction_keeps_pairing_roles_head_and_tail(messages, context_length, protect_last_n):
    assert pairing_problems(messages) == []
    result = engine(context_length, protect_last_n).compress(Conversation("p", messages, "prop:1"))
    assert problems(messages, result.messages) == []
    if not result.outcome.compacted:
        assert result.messages == messages


line = st.one_of(
    conversation().map(lambda m: json.dumps({"id": "x", "messages": m})),
    st.just('{"id": "broken", "messages": ['),
    st.just('{"messages": "not a list"}'),
    st.just("[1, 2, 3]"),
    st.just('{"messages": [{"role": "user", "content": {"a": 1}}]}'),
    st.just("# a comment line"),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(line, min_size=1, max_size=12))
def test_every_input_record_is_accounted_for_once(tmp_path_factory, lines):
    folder = tmp_path_factory.mktemp("prop")
    source = folder / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    run_dir = folder / "run"
    run_in_process(engine(2000, 2), run_dir, source)
    rows = [json.loads(x) for x in (run_dir / "manifest.jsonl").read_text().splitlines()]
    assert sorted(int(r["source"].rsplit(":", 1)[1]) for r in rows) == list(range(1, len(lines) + 1))
    assert all(r["source"].startswith(f"{source}:") for r in rows)
    out = run_dir / "transcripts" / "in.jsonl"
    written = len(out.read_text().splitlines()) if out.exists() else 0
    quarantined = len((run_dir / "quarantine.jsonl").read_text().splitlines())
    assert written + quarantined == len(lines)
    assert quarantined == sum(r["status"] in ("quarantined", "failed") for r in rows)
