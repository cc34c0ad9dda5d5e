"""Input repair: every call gets a result, every result a call, nothing removed."""
import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_pipeline.inputs.repair import UNKNOWN_TOOL, repair_tool_pairing
from hermes_pipeline.transcript import Conversation, pairing_problems, tool_calls

ids = st.sampled_from(["a", "b", "c", None])
message = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, st.text(max_size=5)),
    st.builds(lambda t: {"role": "assistant", "content": t}, st.text(max_size=5)),
    st.builds(lambda i: {"role": "tool", "tool_call_id": i, "content": "r"}, ids),
    st.builds(lambda cs: {"role": "assistant", "content": None, "tool_calls": [
        {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}} for c in cs]},
        st.lists(ids, min_size=1, max_size=3)),
)


def _without_calls(m):
    return {k: v for k, v in m.items() if k != "tool_calls"}


@settings(max_examples=400, deadline=None)
@given(st.lists(message, max_size=15))
def test_repair_pairs_everything_and_removes_nothing(messages):
    lines = [100 + 2 * i for i in range(len(messages))]      # the input line each message was read from
    given_conversation = Conversation("r", list(messages), "t:1", message_lines=lines)
    before = copy.deepcopy(given_conversation)
    conversation = repair_tool_pairing(given_conversation)
    assert given_conversation == before        # a repaired copy comes back; the input is not changed
    repaired = conversation.messages
    assert pairing_problems(repaired) == []
    assert len(conversation.message_lines) == len(repaired)
    position = 0   # every input message is still there, in order (an assistant may have gained calls)
    for original, line in zip(messages, lines):
        while _without_calls(repaired[position]) != _without_calls(original) or \
                tool_calls(repaired[position])[:len(tool_calls(original))] != tool_calls(original):
            position += 1
        assert conversation.message_lines[position] == line      # ... with the line it was read from
        position += 1
    if pairing_problems(messages) == []:
        assert repaired == messages and conversation.notes == []


def test_a_result_inside_another_calls_group_joins_that_group():
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "tool_call_id": "x", "content": "2"}]
    conversation = Conversation("r", list(messages), "t:1")
    conversation = repair_tool_pairing(conversation)
    assert [c["id"] for c in conversation.messages[1]["tool_calls"]] == ["a", "x"]
    assert conversation.messages[1]["tool_calls"][1]["function"]["name"] == UNKNOWN_TOOL
    assert conversation.messages[2:] == messages[2:]
    assert messages[1]["tool_calls"][-1]["id"] == "a"   # the input message itself is not mutated
