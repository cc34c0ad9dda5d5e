"""Transcript formats: detection, reading, writing, exact round trips, bad records."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_pipeline.formats import CONVERSATION, MESSAGE, detect_format, detect_format_in, get_format
from hermes_pipeline.formats.anthropic import KEY
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.inputs.jsonl import Record, Rejected, read_records
from hermes_pipeline.transcript import (
    COMPACTION_NOTE,
    SUMMARY_PREFIX,
    Conversation,
    is_summary_message,
    message_text,
    pairing_problems,
    text_of,
    tool_calls,
)
from testkit.env import CORPUS, REAL, ROOT, TAU_BENCH, examples, shared

DATA = ROOT / "tests" / "data" / "formats"
MAX = 64 << 20
PRUNED = "[Old tool output cleared to save context space]"


# -- helpers ------------------------------------------------------------------------

def read_file(path: Path, fmt_name: str | None = None):
    """(format, layout, items read) for a file, detected from its first records unless named."""
    items = list(read_records(str(path), MAX))
    values = [i.value for i in items if isinstance(i, Record)][:50]
    fmt, layout = detect_format_in(values)
    if fmt_name:
        fmt = get_format(fmt_name)
    return fmt, layout, list(fmt.read(iter(items), str(path), layout))


def conversations(items) -> list[Conversation]:
    return [i for i in items if isinstance(i, Conversation)]


def records(values, path="mem.jsonl") -> list[Record]:
    return [Record(path, n, v, 0) for n, v in enumerate(values, 1)]


def read_values(fmt_name: str, values: list, layout: str = CONVERSATION, path="mem.jsonl"):
    return list(get_format(fmt_name).read(iter(records(values, path)), path, layout))


def views(messages: list[dict]) -> list[dict]:
    return [public(m) for m in messages]


def gist(messages: list[dict]) -> list[tuple]:
    """What must survive any write: roles, text, tool calls (parsed arguments) and result ids."""
    out = []
    for m in messages:
        calls = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in tool_calls(m)]
        out.append((m["role"], text_of(m.get("content")), calls, m.get("tool_call_id")))
    return out


def anthropic_problems(record: dict, strict: bool = False) -> list[str]:
    """Why a record is not a valid Anthropic Messages request (tool pairing, roles, blocks)."""
    found = []
    system = record.get("system")
    if system is not None and not isinstance(system, str) and not (
            isinstance(system, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in system)):
        found.append("system is not a string or text blocks")
    messages = record["messages"]
    for i, m in enumerate(messages):
        if m.get("role") not in ("user", "assistant"):
            found.append(f"{i}: role {m.get('role')!r}")
        if strict and set(m) != {"role", "content"}:
            found.append(f"{i}: extra fields {sorted(set(m) - {'role', 'content'})}")
        content = m.get("content")
        if not isinstance(content, (str, list)):
            found.append(f"{i}: content {type(content).__name__}")
            continue
        blocks = content if isinstance(content, list) else []
        for b in blocks:
            if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                found.append(f"{i}: block {b!r}")
            elif b["type"] == "text" and not (isinstance(b.get("text"), str) and b["text"]):
                found.append(f"{i}: empty text block")
            elif b["type"] == "tool_use" and not isinstance(b.get("input"), dict):
                found.append(f"{i}: tool_use input is not an object")
        uses = [b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            before = messages[i - 1] if i else {}
            wanted = [b["id"] for b in before.get("content", []) if isinstance(before.get("content"), list)
                      and isinstance(b, dict) and b.get("type") == "tool_use"]
            if sorted(b["tool_use_id"] for b in results) != sorted(wanted):
                found.append(f"{i}: tool results {[b['tool_use_id'] for b in results]} answer {wanted}")
            if blocks[:len(results)] != results:
                found.append(f"{i}: tool results are not first")
        if uses and m["role"] == "assistant":
            after = messages[i + 1] if i + 1 < len(messages) else None
            if after is None or after["role"] != "user" or not isinstance(after["content"], list):
                found.append(f"{i}: tool_use without a following user message of results")
    return found


def simulate_compaction(messages: list[dict]) -> list[dict]:
    """Edits the engine makes: pruned tool output, a summary in the middle, a note on the
    system prompt, a stub result, cache markers (strings -> text parts, message-level markers)."""
    msgs = copy.deepcopy(messages)
    n = len(msgs)
    for m in msgs[:max(0, n - 3)]:
        if m["role"] == "tool":
            m["content"] = PRUNED
    head_end = min(3, n)
    while head_end < n and msgs[head_end]["role"] == "tool":
        head_end += 1
    tail_start = max(head_end, n - 4)
    while tail_start > head_end and msgs[tail_start]["role"] == "tool":
        tail_start -= 1
    if tail_start > head_end:
        msgs = msgs[:head_end] + [{"role": "user", "content": f"{SUMMARY_PREFIX}\n## Goal\nkeep going"}] + msgs[tail_start:]
    if msgs and msgs[0]["role"] == "system":
        content = msgs[0]["content"]
        msgs[0]["content"] = (content + "\n\n" + COMPACTION_NOTE if isinstance(content, str)
                              else content + [{"type": "text", "text": COMPACTION_NOTE}])
    for i, m in enumerate(msgs):           # replace one real result by a stub placed first
        ids = [c["id"] for c in tool_calls(m)]
        if ids and i + 1 < len(msgs) and msgs[i + 1]["role"] == "tool":
            del msgs[i + 1]
            msgs.insert(i + 1, {"role": "tool", "tool_call_id": unanswered_call(msgs, i), "content": "[stub]"})
            break
    for m in [m for m in msgs if m["role"] != "system"][-3:]:
        content = m.get("content")
        if m["role"] == "tool" or not content:
            m["cache_control"] = {"type": "ephemeral"}
        elif isinstance(content, str):
            m["content"] = [{"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}]
        elif isinstance(content[-1], dict):
            content[-1]["cache_control"] = {"type": "ephemeral"}
    return msgs


def unanswered_call(msgs, i):
    """A call of msgs[i] that no tool row after it answers (the one whose row was just removed)."""
    answered = []
    j = i + 1
    while j < len(msgs) and msgs[j]["role"] == "tool":
        answered.append(msgs[j]["tool_call_id"])
        j += 1
    ids = [c["id"] for c in tool_calls(msgs[i])]
    for call_id in answered:
        ids.remove(call_id)
    return ids[0]


def corpus_files() -> list[Path]:
    """The real files kept in the repository, then those only the shared corpus has."""
    here = sorted(REAL.glob("*/*.jsonl"))
    names = {p.name for p in here}
    return here + [p for p in sorted(CORPUS.glob("*/*.jsonl")) if p.name not in names]


# -- the shared corpus ------------------------------------------------------------------

CLAUDE_CODE_EXPECTED = {
    # file: (messages, tool calls, toolUseResult bytes dropped, sidechain lines left out)
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": (20, 12, 2290, 0),
    "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": (24, 13, 25308, 22),
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (22, 11, 15047, 405),
    "coverage-test-fix.transcript.jsonl": (30, 13, 6278, 0),
    "hello-world-script.transcript.jsonl": (8, 2, 217, 0),
    "python-to-rust-port.transcript.jsonl": (80, 39, 56528, 0),
    "stop-hook-fast-path-clean.transcript.jsonl": (4, 1, 135, 0),
    "stop-hook-reflection-first-stop.transcript.jsonl": (12, 4, 1502, 0),
    "stop-hook-reflection-second-stop.transcript.jsonl": (2, 0, 0, 0),
    "stop-hook-uncommitted-changes.transcript.jsonl": (8, 2, 524, 0),
}


def test_the_shared_corpus_is_present():
    assert len(list(shared(CORPUS).glob("*/*.jsonl"))) == 11


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name[:30])
def test_corpus_detects_and_reads(path):
    expected = "openai" if path.parent.name == "tau-bench" else "claude-code"
    first = next(i for i in read_records(str(path), MAX) if isinstance(i, Record))
    assert detect_format(first.value)[0].name == expected
    fmt, layout, items = read_file(path)
    assert fmt.name == expected
    assert not [i for i in items if isinstance(i, Rejected)]
    convs = conversations(items)
    lines = sum(1 for line in path.read_text().splitlines() if line.strip())
    assert len(convs) == (lines if expected == "openai" else 1)
    for conv in convs:
        assert pairing_problems(conv.messages) == [], conv.id


@pytest.mark.parametrize("name", sorted(CLAUDE_CODE_EXPECTED))
def test_claude_code_corpus_counts_and_output(name):
    path = next((p for p in corpus_files() if p.name == name), None)
    if path is None:
        shared(CORPUS)           # only the shared corpus has this one: skip, saying why, when it is absent
        pytest.fail(f"{name} is missing from {CORPUS}")
    messages, calls, dropped, sidechain = CLAUDE_CODE_EXPECTED[name]
    fmt, layout, items = read_file(path)
    (conv,) = conversations(items)
    assert (len(conv.messages), sum(len(tool_calls(m)) for m in conv.messages)) == (messages, calls)
    assert (conv.stats["tool_use_result_bytes"], conv.stats["sidechain_events"]) == (dropped, sidechain)
    assert conv.stats["off_chain_events"] == 0

    # independent counts from the raw lines: one assistant message per message.id, one call per tool_use
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    main = [e for e in lines if e["type"] in ("user", "assistant") and not e.get("isSidechain")]
    response_ids = {e["message"]["id"] for e in main if e["type"] == "assistant"}
    uses = [b for e in main if isinstance(e["message"]["content"], list) for b in e["message"]["content"]
            if b["type"] == "tool_use"]
    assert sum(m["role"] == "assistant" for m in conv.messages) == len(response_ids)
    assert calls == len(uses)
    assert sum(m["role"] == "tool" for m in conv.messages) == calls
    last_usage = [e["message"]["usage"] for e in main if e["type"] == "assistant"][-1]
    assert conv.recorded_prompt_tokens == sum(last_usage[k] for k in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))
    assert conv.id == lines[-1]["sessionId"] and conv.layout == MESSAGE

    # written as itself, the session is its lines as they were
    assert [bytes(v) for v in fmt.write(conv, layout)] == [line.rstrip(b"\r") for line in
                                                            path.read_bytes().splitlines() if line.strip()]
    # written as Anthropic (output.format=anthropic), one conversation per line: valid, no toolUseResult,
    # reads back the same
    assert fmt.writable is False and fmt.write_as == "anthropic"
    (out,) = list(get_format(fmt.write_as).write(conv, CONVERSATION))
    assert anthropic_problems(out, strict=True) == []
    assert "toolUseResult" not in json.dumps(out["messages"])
    assert out["id"] == conv.id and out["metadata"]["source_format"] == "claude-code"
    again = read_values("anthropic", [out])
    # a plain text chat is read as OpenAI (same messages); any tool_use makes it Anthropic
    assert detect_format(out)[0].name == ("anthropic" if calls else "openai")
    assert views(again[0].messages) == views(conv.messages)


@pytest.mark.parametrize("path", [TAU_BENCH, CORPUS / "tau-bench" / "gpt-4o-airline.jsonl"], ids=["repo", "shared"])
def test_openai_corpus_round_trip_and_anthropic_output(path):
    shared(path)
    originals = [json.loads(line) for line in path.read_text().splitlines()]
    fmt, layout, items = read_file(path)
    convs = conversations(items)
    assert [next(fmt.write(c, layout)) for c in convs] == originals
    anthropic = get_format("anthropic")
    for conv in convs:
        (out,) = list(anthropic.write(conv, CONVERSATION))
        assert anthropic_problems(out, strict=True) == [], conv.id
        assert isinstance(out["system"], str) and out["metadata"] == conv.record["metadata"]
        back = read_values("anthropic", [out])[0]
        assert gist(back.messages) == gist(conv.messages)
        compacted = simulate_compaction(conv.messages)
        (out,) = list(anthropic.write(Conversation(conv.id, compacted, conv.source, record=conv.record), CONVERSATION))
        assert anthropic_problems(out, strict=True) == [], conv.id


# -- Anthropic ---------------------------------------------------------------------------

def test_anthropic_conversations_round_trip_exactly():
    path = DATA / "anthropic_conversations.jsonl"
    originals = [json.loads(line) for line in path.read_text().splitlines()]
    fmt, layout, items = read_file(path)
    assert (fmt.name, layout) == ("anthropic", CONVERSATION)
    convs = conversations(items)
    assert [next(fmt.write(c, layout)) for c in convs] == originals
    again = conversations(read_values("anthropic", [next(fmt.write(c, layout)) for c in convs]))
    assert [views(c.messages) for c in again] == [views(c.messages) for c in convs]


def test_anthropic_to_openai_shape():
    fmt, layout, items = read_file(DATA / "anthropic_conversations.jsonl")
    weather = conversations(items)[0]
    msgs = views(weather.messages)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool", "user", "assistant", "tool",
                                         "assistant"]
    assert msgs[0]["content"][0]["text"] == "You are a weather assistant."
    assert [c["function"]["arguments"] for c in msgs[2]["tool_calls"]] == [
        '{"city": "Paris", "units": "c"}', '{"city": "Oslo", "units": "c"}']
    assert msgs[2]["content"][0]["type"] == "thinking"              # kept as a part
    assert msgs[4] == {"role": "tool", "tool_call_id": "toolu_2",
                       "content": [{"type": "text", "text": "error: station offline"}]}
    assert msgs[5] == {"role": "user", "content": [{"type": "text", "text": "Oslo matters most to me."}]}
    assert msgs[6]["content"] == [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}]
    assert weather.recorded_prompt_tokens == 620 + 300 + 12 + 30
    assert pairing_problems(weather.messages) == []
    first_system = conversations(items)[2]
    assert first_system.messages[0]["role"] == "system"
    (out,) = list(fmt.write(first_system, layout))
    assert "system" not in out and out["messages"][0]["role"] == "system"   # stays where it was


def test_anthropic_one_message_per_line():
    path = DATA / "anthropic_messages.jsonl"
    originals = [json.loads(line) for line in path.read_text().splitlines()]
    first = originals[0]
    assert detect_format(first)[0].name == "openai"       # alone, a plain user line is ambiguous
    fmt, layout, items = read_file(path)
    assert (fmt.name, layout) == ("anthropic", MESSAGE)
    (conv,) = conversations(items)
    assert conv.id == "anthropic_messages" and len(conv.messages) == 6
    assert conv.recorded_prompt_tokens == 120 + 40 + 9
    assert list(fmt.write(conv, MESSAGE)) == originals
    (record,) = list(fmt.write(conv, CONVERSATION))
    assert record["id"] == "anthropic_messages" and record["messages"] == originals


def test_anthropic_bad_records_are_rejected_with_reasons():
    fmt, layout, items = read_file(DATA / "anthropic_bad.jsonl")
    assert fmt.name == "anthropic"
    rejected = {i.line_no: i.reason for i in items if isinstance(i, Rejected)}
    assert [c.id for c in conversations(items)] == ["ok"]
    assert rejected == {
        2: "message 0 content is a dict (expected string or list of content blocks)",
        3: "message 0 content is a int (expected string or list of content blocks)",
        4: "message 0 content is a NoneType (expected string or list of content blocks)",
        5: "message 0 block 0 is a tool_use without a string id, a string name and an object input",
        6: "message 0 is an OpenAI-style message (tool_calls / tool_call_id) inside an Anthropic transcript",
        7: "system is a dict (expected string or list of text blocks)",
        8: "record is a list, not a conversation object",
        9: "message 0 block 0 is not a content block object with a string 'type'",
    }
    assert all(isinstance(i.raw, bytes) and i.raw for i in items if isinstance(i, Rejected))


def test_anthropic_writer_handles_engine_edits():
    for path in (DATA / "anthropic_conversations.jsonl", DATA / "anthropic_messages.jsonl"):
        fmt, layout, items = read_file(path)
        for conv in conversations(items):
            source = conv.record or {"messages": [m[KEY]["orig"] for m in conv.messages if "orig" in m[KEY]]}
            known = {p.split(": ", 1)[-1] for p in anthropic_problems(source)}   # already in the input
            edited = simulate_compaction(conv.messages)
            (out,) = list(fmt.write(Conversation(conv.id, edited, conv.source, "anthropic", layout, conv.record),
                                    CONVERSATION))
            problems = [p for p in anthropic_problems(out) if p.split(": ", 1)[-1] not in known]
            assert problems == [], (conv.id, problems)
            back = read_values("anthropic", [out])[0]
            assert gist(back.messages) == gist(edited)
            assert any(is_summary_message(m) for m in back.messages) == any(is_summary_message(m) for m in edited)


def test_unchanged_blocks_survive_a_partial_edit():
    fmt, layout, items = read_file(DATA / "anthropic_conversations.jsonl")
    weather = conversations(items)[0]
    messages = copy.deepcopy(weather.messages)
    messages[4] = {**messages[4], "content": PRUNED}            # prune the Oslo error result
    messages[2]["content"][1]["cache_control"] = {"type": "ephemeral"}
    (out,) = list(fmt.write(Conversation("w", messages, "s", "anthropic", CONVERSATION, weather.record), CONVERSATION))
    original = weather.record["messages"]
    assistant, results = out["messages"][1], out["messages"][2]
    assert assistant["id"] == "msg_01" and assistant["usage"] == original[1]["usage"]     # fields kept
    assert assistant["content"][0] == original[1]["content"][0]                            # thinking kept
    assert assistant["content"][1]["cache_control"] == {"type": "ephemeral"}
    assert assistant["content"][3] == original[1]["content"][3]                            # tool_use extras kept
    assert results["content"][0] == original[2]["content"][0]
    assert results["content"][1] == {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
                                     "content": PRUNED}
    assert results["content"][2] == original[2]["content"][2]
    assert out["messages"][3:] == original[3:] and out["system"] == weather.record["system"]


def test_openai_images_and_roles_convert_to_anthropic():
    conv = Conversation("x", [
        {"role": "system", "content": "sys"},
        {"role": "developer", "content": "dev note"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                     {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "r"},
        {"role": "system", "content": "late system note"},
    ], "s")
    (out,) = list(get_format("anthropic").write(conv, CONVERSATION))
    assert out["system"] == "sys"
    assert anthropic_problems(out, strict=True) == []
    assert out["messages"][1]["content"][1] == {"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": "AAAA"}}
    assert out["messages"][1]["content"][2]["source"] == {"type": "url", "url": "https://x/y.png"}
    assert out["messages"][2]["content"] == [{"type": "tool_use", "id": "c1", "name": "f",
                                              "input": {"arguments": "not json"}}]
    assert out["messages"][-1] == {"role": "user", "content": "late system note"}


# -- ShareGPT ------------------------------------------------------------------------------

def test_sharegpt_round_trip_and_shape():
    path = DATA / "sharegpt.jsonl"
    originals = [json.loads(line) for line in path.read_text().splitlines()]
    fmt, layout, items = read_file(path)
    assert (fmt.name, layout) == ("sharegpt", CONVERSATION)
    convs = conversations(items)
    assert [next(fmt.write(c, layout)) for c in convs] == originals
    msgs = views(convs[0].messages)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert msgs[2]["content"] == "<think>\nTwo commands.\n</think>"
    assert [(c["id"], c["function"]["arguments"]) for c in msgs[2]["tool_calls"]] == [
        ("call_1_1", '{"command": "df -h /"}'), ("call_1_2", '{"command": "whoami"}')]
    assert [m.get("tool_call_id") for m in msgs[3:5]] == ["call_1_1", "call_1_2"]
    assert json.loads(msgs[4]["content"])["content"] == "root"
    assert pairing_problems(convs[0].messages) == []
    second = views(convs[1].messages)
    assert second[1] == {"role": "assistant", "content": "hi <tool_call>not json</tool_call>"}   # kept as text
    assert second[3]["tool_calls"][0]["function"]["arguments"] == '{"text": "hi"}'
    assert pairing_problems(convs[1].messages) == []


def test_sharegpt_edits_and_bad_records():
    fmt, layout, items = read_file(DATA / "sharegpt.jsonl")
    for conv in conversations(items):
        edited = simulate_compaction(conv.messages)
        (out,) = list(fmt.write(Conversation(conv.id, edited, conv.source, "sharegpt", layout, conv.record), layout))
        back = read_values("sharegpt", [out])[0]
        assert [(r, t.strip(), [c[1:] for c in calls]) for r, t, calls, _ in gist(back.messages)] == \
               [(r, t.strip(), [c[1:] for c in calls]) for r, t, calls, _ in gist(edited)]
        assert pairing_problems(back.messages) == []
        assert {k: v for k, v in out.items() if k != "conversations"} == \
               {k: v for k, v in conv.record.items() if k != "conversations"}
    fmt, layout, items = read_file(DATA / "sharegpt_bad.jsonl")
    rejected = {i.line_no: i.reason for i in items if isinstance(i, Rejected)}
    assert len(conversations(items)) == 1
    assert rejected == {
        2: "turn 0 value is a dict (expected a string)",
        3: "turn 0 has 'from' 'narrator', not one of system, human, user, gpt, assistant, tool, observation",
        4: "turn 0 value is a NoneType (expected a string)",
        5: "record has no 'conversations' list",
    }


def test_cross_format_writes():
    _, _, items = read_file(DATA / "anthropic_conversations.jsonl")
    weather = conversations(items)[0]
    (turns,) = list(get_format("sharegpt").write(weather, CONVERSATION))
    assert "messages" not in turns and "system" not in turns and turns["metadata"] == {"user": "u-17", "tags": ["demo"]}
    back = read_values("sharegpt", [turns])[0]
    assert [m["role"] for m in back.messages] == [m["role"] for m in weather.messages]
    assert pairing_problems(back.messages) == []
    _, _, items = read_file(DATA / "sharegpt.jsonl")
    trajectory = conversations(items)[0]
    (record,) = list(get_format("anthropic").write(trajectory, CONVERSATION))
    assert "conversations" not in record and record["source"] == "hermes-agent"
    assert anthropic_problems(record, strict=True) == []


# -- Claude Code fixtures ---------------------------------------------------------------

def test_claude_code_session_fixture():
    fmt, layout, items = read_file(DATA / "claude_code_session.jsonl")
    assert (fmt.name, layout) == ("claude-code", MESSAGE)
    rejected = {i.line_no: i.reason for i in items if isinstance(i, Rejected)}
    assert set(rejected) == {12, 14, 15}
    assert rejected[12].startswith("malformed JSON")
    assert rejected[14] == "record is a list, not a Claude Code event"
    assert rejected[15] == "user event message content is a NoneType (expected string or list of content blocks)"
    (conv,) = conversations(items)
    msgs = views(conv.messages)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]
    assert [b["type"] for b in msgs[1]["content"]] == ["thinking", "text"]        # 4 lines, one response
    assert [c["id"] for c in msgs[1]["tool_calls"]] == ["toolu_r", "toolu_b"]
    assert msgs[2]["tool_call_id"] == "toolu_r"          # the parallel result beside the chain is kept
    assert pairing_problems(conv.messages) == []
    assert conv.recorded_prompt_tokens == 2 + 50 + 4300 + 20
    assert conv.stats["sidechain_events"] == 2 and conv.stats["assistant_lines_merged"] == 3
    assert any("no parent line in the log" in n for n in conv.notes)
    # written as itself: every line as it was, the ones set aside included
    assert [bytes(v) for v in fmt.write(conv, layout)] == [
        line for line in (DATA / "claude_code_session.jsonl").read_bytes().split(b"\n") if line.strip()]
    (out,) = list(get_format(fmt.write_as).write(conv, CONVERSATION))
    assert anthropic_problems(out, strict=True) == []
    assert [e["type"] for e in out["metadata"]["events"]] == ["summary", "queue-operation", "system"]
    assert out["metadata"]["cwd"] == "/tmp/demo" and out["metadata"]["model"] == "claude-opus-4-5"
    tool_results = out["messages"][2]["content"]
    assert [b["tool_use_id"] for b in tool_results] == ["toolu_r", "toolu_b"] and tool_results[1]["is_error"]


def test_claude_code_compaction_summary_and_rewind():
    fmt, layout, items = read_file(DATA / "claude_code_compacted.jsonl")
    (conv,) = conversations(items)
    msgs = views(conv.messages)
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert msgs[0]["content"].startswith(SUMMARY_PREFIX + "\nThis session is being continued")
    assert is_summary_message(conv.messages[0])
    assert msgs[2]["content"] == "Try approach B instead"                # the rewound branch is left out
    assert conv.stats["off_chain_events"] == 4
    (out,) = list(get_format(fmt.write_as).write(conv, CONVERSATION))
    assert anthropic_problems(out, strict=True) == []


def test_claude_code_sub_agent_file_and_titles_only():
    fmt, layout, items = read_file(DATA / "agent-7f3a.jsonl")
    (conv,) = conversations(items)
    assert conv.id == "agent-7f3a" and len(conv.messages) == 4 and pairing_problems(conv.messages) == []
    assert conv.stats["sidechain_events"] == 0
    fmt, layout, items = read_file(DATA / "claude_code_titles_only.jsonl")
    (conv,) = conversations(items)
    assert conv.messages == [] and conv.record["metadata"]["events"][0]["summary"] == "An old session"


# -- properties ------------------------------------------------------------------------------

TEXT = st.text(max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | st.floats(allow_nan=False) | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=6)
EXTRA = st.dictionaries(st.sampled_from(["x_meta", "cache_control", "citations", "custom"]), JSON, max_size=2)


@st.composite
def anthropic_block(draw, kinds):
    kind = draw(st.sampled_from(kinds))
    if kind == "text":
        block = {"type": "text", "text": draw(TEXT)}
    elif kind == "thinking":
        block = {"type": "thinking", "thinking": draw(TEXT), "signature": draw(TEXT)}
    elif kind == "redacted_thinking":
        block = {"type": "redacted_thinking", "data": draw(TEXT)}
    elif kind == "image":
        block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": draw(TEXT)}}
    else:
        block = {"type": draw(st.sampled_from(["future_block", "server_tool_use", "document"])), "payload": draw(JSON)}
    return {**block, **draw(EXTRA)}


@st.composite
def anthropic_record(draw):
    messages, counter = [], 0
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(TEXT)})
    for turn in range(draw(st.integers(0, 6))):
        calls = []
        role = "user" if turn % 2 == 0 else "assistant"
        if role == "assistant" and draw(st.booleans()):
            content = draw(TEXT)
        elif role == "assistant":
            content = draw(st.lists(anthropic_block(["text", "thinking", "redacted_thinking", "other"]), max_size=3))
            for _ in range(draw(st.integers(0, 2))):
                counter += 1
                calls.append(f"toolu_{counter if draw(st.booleans()) else 1}")   # ids may repeat
                content.insert(draw(st.integers(0, len(content))), {
                    "type": "tool_use", "id": calls[-1], "name": draw(TEXT), "input": draw(st.dictionaries(TEXT, JSON)),
                    **draw(EXTRA)})
        else:
            content = draw(st.one_of(TEXT, st.lists(anthropic_block(["text", "image", "other"]), max_size=2)))
        messages.append({"role": role, "content": content, **draw(EXTRA)})
        if calls:
            results = [{"type": "tool_result", "tool_use_id": call_id,
                        **draw(st.fixed_dictionaries({}, optional={
                            "content": st.one_of(TEXT, st.lists(anthropic_block(["text", "image"]), max_size=2)),
                            "is_error": st.booleans()}))} for call_id in calls]
            rest = draw(st.lists(anthropic_block(["text", "image"]), max_size=2))
            messages.append({"role": "user", "content": results + rest if draw(st.booleans()) else rest + results})
    record = {"messages": messages, **draw(st.dictionaries(st.sampled_from(["id", "metadata", "model"]), JSON))}
    if draw(st.booleans()):
        record["system"] = draw(st.one_of(TEXT, st.lists(anthropic_block(["text"]), max_size=2)))
    return record


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anthropic_record(), st.data())
def test_anthropic_round_trip_property(record, data):
    fmt = get_format("anthropic")
    (conv,) = read_values("anthropic", [record])
    assert next(fmt.write(conv, CONVERSATION)) == record
    (again,) = read_values("anthropic", [next(fmt.write(conv, CONVERSATION))])
    assert views(again.messages) == views(conv.messages)
    lines = record["messages"]
    for per_line in read_values("anthropic", lines, MESSAGE):      # none when there are no lines
        assert list(fmt.write(per_line, MESSAGE)) == lines
    # any edit the engine makes comes back as written
    edited = copy.deepcopy(conv.messages)
    for i in data.draw(st.lists(st.integers(0, max(0, len(edited) - 1)), max_size=3)) if edited else []:
        edited[i] = {**edited[i], "content": f"edited {i}"}
    (out,) = list(fmt.write(Conversation(conv.id, edited, "s", "anthropic", CONVERSATION, record), CONVERSATION))
    (back,) = read_values("anthropic", [out])
    assert gist(back.messages) == gist(edited)


@st.composite
def sharegpt_record(draw):
    turns = []
    if draw(st.booleans()):
        turns.append({"from": "system", "value": draw(TEXT)})
    for turn in range(draw(st.integers(0, 6))):
        if turn % 2 == 0:
            turns.append({"from": draw(st.sampled_from(["human", "user"])), "value": draw(TEXT)})
            continue
        calls = [json.dumps({"name": draw(TEXT), "arguments": draw(st.dictionaries(TEXT, JSON))})
                 for _ in range(draw(st.integers(0, 2)))]
        noise = draw(st.sampled_from(["", "<think>\nhm\n</think>\n", "text <tool_call>broken</tool_call> "]))
        value = noise + "\n".join(f"<tool_call>\n{c}\n</tool_call>" for c in calls)
        turns.append({"from": "gpt", "value": value, **draw(EXTRA)})
        if calls:
            body = "\n".join(f"<tool_response>\n{draw(TEXT)}\n</tool_response>" for _ in calls)
            turns.append({"from": "tool", "value": body})
    return {"conversations": turns, **draw(st.dictionaries(st.sampled_from(["id", "tools", "source"]), JSON))}


@settings(max_examples=examples(100), deadline=None)
@given(sharegpt_record())
def test_sharegpt_round_trip_property(record):
    fmt = get_format("sharegpt")
    (conv,) = read_values("sharegpt", [record])
    assert next(fmt.write(conv, CONVERSATION)) == record
    (again,) = read_values("sharegpt", [next(fmt.write(conv, CONVERSATION))])
    assert views(again.messages) == views(conv.messages)
    assert pairing_problems(conv.messages) == []
    edited = [{**m, "content": "edited"} if m["role"] == "tool" else m for m in conv.messages]
    (out,) = list(fmt.write(Conversation(conv.id, edited, "s", "sharegpt", CONVERSATION, record), CONVERSATION))
    (back,) = read_values("sharegpt", [out])
    assert [m.get("content") for m in back.messages if m["role"] == "tool"] == \
           [m["content"] for m in edited if m["role"] == "tool"]


def _fixture_values() -> list:
    values = []
    for path in sorted(DATA.glob("*.jsonl")):
        values += [i.value for i in read_records(str(path), MAX) if isinstance(i, Record)]
    return values


@st.composite
def mutated(draw):
    """A real record with one value somewhere replaced by random JSON."""
    value = copy.deepcopy(draw(st.sampled_from(_fixture_values())))
    paths = []

    def walk(node, path):
        paths.append(path)
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            walk(child, path + [key])
    walk(value, [])
    path = draw(st.sampled_from(paths))
    replacement = draw(JSON)
    if not path:
        return replacement
    node = value
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = replacement
    return value


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutated(), min_size=1, max_size=4))
def test_mutated_records_never_crash_or_vanish(values):
    layouts = {"anthropic": (CONVERSATION, MESSAGE), "openai": (CONVERSATION, MESSAGE),
               "sharegpt": (CONVERSATION,), "claude-code": (MESSAGE,)}
    for name, supported in layouts.items():
        fmt = get_format(name)
        for layout in supported:
            out = read_values(name, values, layout)
            rejected = [i for i in out if isinstance(i, Rejected)]
            convs = conversations(out)
            assert all(i.reason for i in rejected)
            if layout == CONVERSATION:
                assert len(rejected) + len(convs) == len(values)
            else:
                assert len(convs) == (1 if len(rejected) < len(values) else 0)
            for conv in convs:
                writer = get_format(getattr(fmt, "write_as", name)) if not fmt.writable else fmt
                assert list(writer.write(conv, layout if fmt.writable else CONVERSATION))


# -- written conversations alternate -----------------------------------------------------

def _anthropic_session(turns: int = 30) -> dict:
    """An Anthropic conversation whose head ends with a tool result, as coding sessions do."""
    messages = [{"role": "user", "content": "Fix the failing build."}]
    for i in range(turns):
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": f"Step {i}: running make."},
                                              {"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                               "input": {"command": f"make target{i}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                          "content": f"make: building target{i}\n" + "ok line\n" * 80}]},
        ]
    messages.append({"role": "assistant", "content": "All targets build."})
    return {"system": "You are a coding agent.", "messages": messages}


def test_a_compacted_anthropic_conversation_alternates_its_roles(tmp_path):
    from testkit.env import read_jsonl, run_cli
    source = tmp_path / "session.jsonl"
    source.write_text(json.dumps(_anthropic_session()) + "\n")
    result = run_cli(tmp_path / "run", f"input={source}", "model.context_length=4000", "compression.protect_last_n=4")
    assert result.returncode == 0, result.stderr
    [row] = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["status"] == "compacted"
    [written] = read_jsonl(tmp_path / "run" / "transcripts" / "session.jsonl")
    roles = [m["role"] for m in written["messages"]]
    assert all(a != b for a, b in zip(roles, roles[1:])), roles
    # the summary rides in the user message that carries the head's last tool result, after it
    [carrier] = [m for m in written["messages"] if isinstance(m["content"], list)
                 and any(SUMMARY_PREFIX in (b.get("text") or "") for b in m["content"])]
    kinds = [b["type"] for b in carrier["content"]]
    assert carrier["role"] == "user" and kinds[0] == "tool_result" and kinds[-1] == "text", kinds
    # and read back, it is the same compacted conversation: results, then the summary as a user turn
    [again] = get_format("anthropic").read(list(read_records(str(tmp_path / "run" / "transcripts" / "session.jsonl"),
                                                             1 << 30)), "x", CONVERSATION)
    internal_roles = [m["role"] for m in again.messages]
    summary_at = next(i for i, m in enumerate(again.messages) if SUMMARY_PREFIX in message_text(m)[:400])
    assert internal_roles[summary_at - 1] == "tool" and internal_roles[summary_at] == "user"


def test_written_as_openai_a_conversation_has_only_parts_chat_completions_takes(tmp_path):
    from testkit.env import read_jsonl, run_cli
    session = _anthropic_session(turns=2)
    session["messages"][0]["content"] = [
        {"type": "text", "text": "Fix the failing build; the screenshot shows the error."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/shot.png"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "build log"}}]
    session["messages"][1]["content"].insert(0, {"type": "thinking", "thinking": "make first", "signature": "s"})
    session["messages"].append({"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xx"}]})
    source = tmp_path / "session.jsonl"
    source.write_text(json.dumps(session) + "\n")
    result = run_cli(tmp_path / "run", f"input={source}", "output.format=openai", "compression.enabled=false")
    assert result.returncode == 0, result.stderr
    [written] = read_jsonl(tmp_path / "run" / "transcripts" / "session.jsonl")
    parts = [p for m in written["messages"] if isinstance(m.get("content"), list) for p in m["content"]]
    assert {p["type"] for p in parts} <= {"text", "image_url"}
    first = written["messages"][1]["content"]          # after the system message
    assert first[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    assert first[2] == {"type": "image_url", "image_url": {"url": "https://example.com/shot.png"}}
    assert first[3]["type"] == "text" and "build log" in first[3]["text"]
    assert not any("make first" in json.dumps(m) for m in written["messages"])        # reasoning dropped
    assert written["messages"][-1] == {"role": "assistant", "content": ""}
    calls = {c["id"] for m in written["messages"] for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in written["messages"] if m["role"] == "tool"}
    assert calls == results == {"t0", "t1"}


def test_written_as_openai_a_compacted_claude_code_log_has_no_message_level_cache_marker(tmp_path):
    """The cache marks of a Claude model go on content parts in chat messages (OpenRouter's form); a
    message-level cache_control is Anthropic's alone."""
    from testkit.env import REAL, read_jsonl, run_cli
    source = REAL / "vsla-claude-sessions"
    result = run_cli(tmp_path / "run", f"input={source}", "output.format=openai", "model.context_length=16000")
    assert result.returncode in (0, 2), result.stderr
    written = [m for f in (tmp_path / "run" / "transcripts").rglob("*.jsonl") for r in read_jsonl(f)
               for m in r["messages"]]
    assert written and not any("cache_control" in m for m in written)
