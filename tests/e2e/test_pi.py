"""pi coding agent session logs (badlogic/pi-mono): detection, the context pi would send, output."""
from __future__ import annotations

import json
from pathlib import Path

from hermes_pipeline.formats import CONVERSATION, FORMATS, MESSAGE, detect_format, detect_format_in, get_format
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.inputs.jsonl import Record, Rejected, read_records
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import SUMMARY_PREFIX, Conversation, is_summary_message, pairing_problems
from testkit.env import LONG_SESSIONS, ROOT, read_jsonl, run_cli, shared
from testkit.pi_logs import version_1_of
from testkit.validity import problems, summary_first_problems

DATA = ROOT / "tests" / "data" / "formats"
MAX = 64 << 20


def read(path: Path):
    items = list(read_records(str(path), MAX))
    fmt, layout = detect_format_in(i.value for i in items if isinstance(i, Record))
    out = list(fmt.read(iter(items), str(path), layout))
    return fmt, layout, [i for i in out if isinstance(i, Rejected)], [i for i in out if isinstance(i, Conversation)]


def roles(conversation: Conversation) -> list[str]:
    return [m["role"] for m in conversation.messages]


def write_log(path: Path, entries: list) -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    return path


HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}


def message(id_, parent, role, content, **extra):
    return {"type": "message", "id": id_, "parentId": parent, "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": role, "content": content, **extra}}


def test_detection_and_order():
    assert detect_format(HEADER)[0].name == "pi"
    assert detect_format(message("a", None, "user", "hi"))[0].name == "pi"
    # pi entries are not taken for another format, and other formats' records are not pi
    assert get_format("pi").detect({"type": "message", "role": "assistant", "content": []}) is None
    assert get_format("pi").detect({"role": "user", "content": "hi"}) is None
    claude = {"type": "user", "sessionId": "x", "parentUuid": None, "message": {"role": "user", "content": "hi"}}
    assert detect_format(claude)[0].name == "claude-code"
    assert list(FORMATS)[:2] == ["claude-code", "pi"]


def test_session_fixture_follows_the_branch_and_keeps_tools_images_and_bash():
    fmt, layout, rejected, (conv,) = read(DATA / "pi_session.jsonl")
    assert (fmt.name, layout, fmt.writable, fmt.write_as) == ("pi", MESSAGE, False, "anthropic")
    assert {r.line_no: r.reason.split(":")[0] for r in rejected} == {
        18: "malformed JSON", 22: "record is a list, not a pi session entry"}
    assert roles(conv) == ["user", "assistant", "tool", "tool", "assistant", "tool", "user",
                           "assistant", "tool", "assistant", "tool", "assistant"]
    msgs = [public(m) for m in conv.messages]
    assert msgs[0]["content"][1]["type"] == "image" and msgs[0]["content"][1]["source"]["media_type"] == "image/png"
    assert [c["id"] for c in msgs[1]["tool_calls"]] == ["toolu_01A", "toolu_01B"]
    assert json.loads(msgs[1]["tool_calls"][0]["function"]["arguments"]) == {"path": "src/weather/cli.py"}
    assert msgs[1]["content"][0] == {"type": "thinking", "thinking": "Look at the argument parsing first.",
                                     "signature": "EqQBCkYIBxgCKkA"}
    # the user's !pytest and the next prompt are one user turn; the rewound answer is left out
    assert msgs[6]["content"][0]["text"].startswith("Ran `pytest -q`\n```\n2 passed")
    assert all("Adding it to test_api.py" not in json.dumps(m) for m in msgs)
    assert conv.stats["off_path_entries"] == 1 and conv.stats["records"] == 19
    assert pairing_problems(conv.messages) == []
    assert any("no parent entry in the log" in n for n in conv.notes)       # the broken line was bridged
    assert conv.id == "0f1e2d3c-4b5a-4697-8877-665544332211"
    assert conv.recorded_prompt_tokens == 20 + 40 + 5100 + 300

    # written as itself: every line as it was, the ones set aside included
    assert [bytes(v) for v in fmt.write(conv, layout)] == [
        line for line in (DATA / "pi_session.jsonl").read_bytes().split(b"\n") if line.strip()]
    (out,) = list(get_format(fmt.write_as).write(conv, "conversation"))
    assert out["metadata"]["source_format"] == "pi" and out["metadata"]["cwd"] == "/home/dev/projects/weather-cli"
    assert [e["type"] for e in out["metadata"]["events"]] == ["model_change", "thinking_level_change", "label",
                                                              "session_info"]
    error_result = out["messages"][-2]["content"][0]
    assert error_result["type"] == "tool_result" and error_result["is_error"] is True
    (back,) = [c for c in get_format("anthropic").read(iter([Record("o", 1, out, 0)]), "o", "conversation")]
    assert [public(m) for m in back.messages] == msgs


def test_compaction_entry_becomes_the_previous_summary():
    _, _, rejected, (conv,) = read(DATA / "pi_compacted.jsonl")
    assert rejected == []
    assert is_summary_message(conv.messages[0]) and conv.messages[0]["content"].startswith(SUMMARY_PREFIX + "\n## Goal")
    # from firstKeptEntryId on: the kept user message, then what came after the compaction
    assert conv.messages[1]["content"] == "Also keep the API_ prefix."
    assert roles(conv) == ["user", "user", "assistant", "tool", "user", "assistant"]
    assert conv.stats["compacted_entries"] == 4 and conv.stats["failed_turns_dropped"] == 1
    assert any("dropped an empty error assistant turn" in n for n in conv.notes)


def test_version_1_linear_log_and_broken_lines(tmp_path):
    path = write_log(tmp_path / "v1.jsonl", [
        {"type": "session", "id": "old", "timestamp": "2025-06-01T00:00:00Z", "cwd": "/w", "provider": "anthropic",
         "modelId": "claude-sonnet-4"},
        {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "list files"}},
        {"type": "message", "timestamp": "t", "message": {"role": "assistant", "content": [
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}], "stopReason": "toolUse"}},
        '{"type": "message", "timestamp": "t", "message": {"role": "toolResult", "toolCallId": "c1", "con',
        {"type": "message", "timestamp": "t", "message": {"role": "hookMessage", "content": "lint: ok"}},
        {"type": "message", "timestamp": "t", "message": {"role": "assistant", "content": {"oops": 1}}},
        {"type": "message", "timestamp": "t", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "done"}], "stopReason": "stop", "usage": {"input": 5, "output": 2, "cacheRead": 0,
                                                                               "cacheWrite": 0, "totalTokens": 7}}},
    ])
    fmt, layout, rejected, (conv,) = read(path)
    assert fmt.name == "pi"
    assert {r.line_no for r in rejected} == {4, 6}
    assert "content is a dict" in next(r.reason for r in rejected if r.line_no == 6)
    # the tool result was on the broken line: the call has no result (the run adds a stub)
    assert roles(conv) == ["user", "assistant", "user", "assistant"]
    assert conv.recorded_prompt_tokens == 7 and conv.id == "old"


def test_cli_compacts_a_pi_log_as_pi_or_as_anthropic(tmp_path):
    entries, parent = [HEADER], None
    for i in range(40):
        user = message(f"u{i}", parent, "user", f"step {i}: run the tests of module {i}")
        call = message(f"a{i}", f"u{i}", "assistant", [
            {"type": "text", "text": f"Running tests for module {i}."},
            {"type": "toolCall", "id": f"call_{i}", "name": "bash", "arguments": {"command": f"pytest tests/m{i}"}}],
            stopReason="toolUse")
        result = message(f"r{i}", f"a{i}", "toolResult", [{"type": "text", "text": f"{i} passed\n" * 60}],
                         toolCallId=f"call_{i}", toolName="bash", isError=False)
        entries += [user, call, result]
        parent = f"r{i}"
    entries.append(message("end", parent, "assistant", [{"type": "text", "text": "All green."}], stopReason="stop"))
    path = write_log(tmp_path / "session.jsonl", entries)
    _, _, _, (before,) = read(path)
    args = (f"input={path}", "model.context_length=4000", "compression.protect_last_n=4")
    # the default: a pi session, compacted as pi does; read back, it is the compacted conversation
    result = run_cli(tmp_path / "run", *args)
    assert result.returncode == 0, result.stderr
    (row,) = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["format"] == "pi" and row["status"] == "compacted" and row["stats"]["records"] == len(entries)
    _, layout, _, (after,) = read(tmp_path / "run" / "transcripts" / "session.jsonl")
    assert layout == "message" and after.id == "s-1"
    assert summary_first_problems([public(m) for m in before.messages], [public(m) for m in after.messages]) == []
    # output.format=anthropic: one Anthropic conversation per line
    result = run_cli(tmp_path / "anthropic", *args, "output.format=anthropic")
    assert result.returncode == 0, result.stderr
    (out,) = read_jsonl(tmp_path / "anthropic" / "transcripts" / "session.jsonl")
    assert out["id"] == "s-1" and out["metadata"]["source_format"] == "pi"
    (after,) = list(get_format("anthropic").read(iter([Record("o", 1, out, 0)]), "o", "conversation"))
    assert problems([public(m) for m in before.messages], [public(m) for m in after.messages]) == []


def test_reasoning_of_another_provider_is_text_a_signed_one_stays_thinking(tmp_path):
    """Anthropic refuses a thinking block without its signature (GLM or GPT reasoning logged by pi)."""
    path = write_log(tmp_path / "s.jsonl", [
        HEADER,
        message("a", None, "user", "Fix the parser."),
        message("b", "a", "assistant", [{"type": "thinking", "thinking": "GLM reasons here."},
                                        {"type": "text", "text": "Looking."}], provider="zai", model="glm-4.6"),
        message("c", "b", "user", "Go on."),
        message("d", "c", "assistant", [{"type": "thinking", "thinking": "Claude reasons.", "thinkingSignature": "Eq1"},
                                        {"type": "text", "text": "Done."}], provider="anthropic"),
    ])
    _, _, _, (conv,) = read(path)
    [record] = list(get_format("anthropic").write(conv, CONVERSATION))
    first, second = record["messages"][1]["content"], record["messages"][3]["content"]
    assert first[0] == {"type": "text", "text": "GLM reasons here."}
    assert second[0] == {"type": "thinking", "thinking": "Claude reasons.", "signature": "Eq1"}
    assert all(b.get("signature") for m in record["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "thinking")


# -- version 1 logs: a compaction names its first kept entry by index ------------------------


def test_a_version_1_log_is_read_as_pi_migrates_it(tmp_path):
    """The real session as a version 1 log reads as the same conversation: the summary, the entries from
    `firstKeptEntryIndex` on, what came after; far fewer tokens than the context the compaction replaced."""
    source = shared(LONG_SESSIONS / "agent-complex-task" / "03-raddit-dashboard-pr.session.jsonl")
    v1 = version_1_of(source, tmp_path / "v1.jsonl")
    _, layout, rejected, (now,) = read(source)
    _, _, none, (then,) = read(v1)
    assert none == [] and layout == MESSAGE
    assert [public(m) for m in then.messages] == [public(m) for m in now.messages]
    assert is_summary_message(then.messages[0]) and then.stats["compacted_entries"] > 100
    counter = TokenCounter()
    read_as = sum(counter.count_messages(then.messages))
    everything = sum(counter.count_messages(read(_without_compactions(v1, tmp_path / "all.jsonl"))[3][0].messages))
    compaction = [json.loads(line) for line in v1.read_text().splitlines() if '"compaction"' in line][-1]
    # the context after a compaction is a fraction of the one it replaced; all the history before it is not
    assert read_as < compaction["tokensBefore"] / 4 < everything


def _without_compactions(path: Path, out: Path) -> Path:
    lines = [line for line in path.read_text().splitlines() if json.loads(line).get("type") != "compaction"]
    out.write_text("\n".join(lines) + "\n")
    return out


def test_a_version_1_index_at_the_header_or_past_the_end_keeps_nothing(tmp_path):
    entries = [{"type": "session", "id": "v1", "timestamp": "2025-06-01T00:00:00Z", "cwd": "/w"},
               {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "first"}},
               {"type": "message", "timestamp": "t", "message": {"role": "assistant", "content": [
                   {"type": "text", "text": "one"}]}},
               {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "second"}}]
    for index, kept in ((2, ["one", "second"]), (0, []), (99, []), (None, [])):
        compaction = {"type": "compaction", "timestamp": "t", "summary": "## Goal\n- the task", "tokensBefore": 9}
        if index is not None:
            compaction["firstKeptEntryIndex"] = index
        after = {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "after"}}
        _, _, _, (conv,) = read(write_log(tmp_path / f"v1-{index}.jsonl", entries + [compaction, after]))
        texts = [t for m in conv.messages for t in ([m["content"]] if isinstance(m["content"], str)
                                                    else [b["text"] for b in m["content"]])]
        assert texts[0].startswith(SUMMARY_PREFIX) and texts[1:] == kept + ["after"], index


def test_a_nan_timestamp_is_no_time():
    """JSON logs may hold NaN (the fuzz test found a header with one): no time, not a failed conversation."""
    from hermes_pipeline.formats.pi.writer import millis
    assert millis(float("nan")) is None and millis(float("inf")) is None and millis(1767600000000.0) == 1767600000000


def test_a_command_the_user_ran_is_output_pruned_and_shortened_and_the_typed_command_stays(tmp_path):
    """pi stores a user-run `!find .` as a bashExecution message; as the latest user message it must not be
    kept whole at the expense of the summary: its output is cut like a tool output, the command stays."""
    entries, parent = [HEADER], None
    for i in range(60):
        user = message(f"u{i}", parent, "user", f"step {i}: edit src/module_{i}.py and rerun its tests")
        call = message(f"a{i}", f"u{i}", "assistant", [
            {"type": "text", "text": f"Editing module {i}."},
            {"type": "toolCall", "id": f"call_{i}", "name": "edit",
             "arguments": {"path": f"src/module_{i}.py", "oldText": "x = 1", "newText": f"x = {i}"}}],
            stopReason="toolUse")
        result = message(f"r{i}", f"a{i}", "toolResult", [{"type": "text", "text": f"edited\n{'ok ' * 400}"}],
                         toolCallId=f"call_{i}", toolName="edit", isError=False)
        entries += [user, call, result]
        parent = f"r{i}"
    listing = "".join(f"./src/generated/part_{n:05d}/file_{n:05d}.json\n" for n in range(2200))   # ~95 KB: over what 32K allows
    entries.append({"type": "message", "id": "bash", "parentId": parent, "timestamp": "2026-01-01T00:00:02Z",
                    "message": {"role": "bashExecution", "command": "find .", "output": listing, "exitCode": 0,
                                "cancelled": False, "truncated": False, "timestamp": 1767225602000}})
    path = write_log(tmp_path / "session.jsonl", entries)
    result = run_cli(tmp_path / "run", f"input={path}", "model.context_length=32000")
    assert result.returncode == 0, result.stderr
    (row,) = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert row["status"] == "compacted" and row["fits"] is True, row.get("fit_reason")
    _, _, _, (after,) = read(tmp_path / "run" / "transcripts" / "session.jsonl")
    text = "\n".join(json.dumps(m["content"]) for m in after.messages)
    assert "Ran `find .`" in text and len(text) < len(listing)          # the command, not all its output
    changed = [f"src/module_{i}.py" for i in range(60)]
    assert sum(p in text for p in changed) >= 0.97 * len(changed)       # the summary kept its files
