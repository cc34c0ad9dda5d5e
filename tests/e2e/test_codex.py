"""Codex CLI rollouts: read as what Codex would send next, written back as Codex's own compaction.

The real Codex CLI (agents/, `make agents`) is the judge: the committed fixture
was recorded with it against the fake Responses API (testkit/codex_cli.py),
with what Codex sent when it resumed the rollout; compacted output is resumed
by it again, and a fresh 1-5 MB session with several compactions is recorded
in the slow test. Our recordings name a custom provider (`fake`); real rollouts
name the built-in `openai` one, which the last tests give them (no real rollout
can be shipped here), resumed with `python -m testkit.resume` too.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from hermes_pipeline.formats import detect_format_in
from hermes_pipeline.formats.codex.rollout import context_tokens, item_text, replay
from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.stages.prune import PRUNED_TOOL_OUTPUT
from hermes_pipeline.testing.fake_responses import FakeResponses
from hermes_pipeline.transcript import SUMMARY_PREFIX, pairing_problems
from testkit.codex_cli import BUILT_IN, FIXTURES, need_codex, record_session, sent_history
from testkit.env import ROOT, read_jsonl, run_cli

FIXTURE = sorted(FIXTURES.glob("rollout-*.jsonl"))[0]
SENT = json.loads(FIXTURE.with_suffix(".sent.json").read_text())


def lines_of(path: Path) -> list[dict]:
    return read_jsonl(path)


def read(path: Path):
    records = [r for r in read_records(str(path), 1 << 26) if isinstance(r, Record)]
    fmt, layout = detect_format_in(r.value for r in records[:50])
    return fmt, list(fmt.read(records, str(path), layout))


def key(item: dict) -> tuple:
    """What of an item the model reads (ids and Codex's bookkeeping fields left out)."""
    return (item.get("type"), item.get("role"), item_text(item) if item.get("type") == "message" else None,
            item.get("call_id"), item.get("name"), item.get("arguments"), item.get("input"),
            json.dumps(item.get("output")), json.dumps(item.get("summary")))


def call_problems(items: list[dict]) -> list[str]:
    """Calls without an output after them and outputs without a call before them, by call_id."""
    problems, open_calls = [], {}
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            open_calls[item["call_id"]] = index
        elif kind in ("function_call_output", "custom_tool_call_output"):
            if open_calls.pop(item["call_id"], None) is None:
                problems.append(f"item {index}: output {item['call_id']} has no call before it")
    return problems + [f"item {i}: call {c} has no output" for c, i in open_calls.items()]


def compacted_run(tmp_path: Path, source: Path, *overrides: str) -> tuple[dict, list[dict]]:
    result = run_cli(tmp_path / "run", f"input={source}", *overrides)
    assert result.returncode == 0, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert len(rows) == 1
    return rows[0], lines_of(tmp_path / "run" / "transcripts" / source.name)


# -- reading -------------------------------------------------------------------------

def test_a_rollout_is_detected_and_read_as_the_history_codex_sends_next():
    fmt, conversations = read(FIXTURE)
    assert fmt.name == "codex" and len(conversations) == 1
    rollout = replay(lines_of(FIXTURE))
    assert rollout.compactions >= 2                        # the fixture has Codex's own compactions ...
    assert [key(i) for i in rollout.history] == [key(i) for i in SENT]   # ... and the history after them is
    conversation = conversations[0]                        # exactly what Codex sent when it resumed it
    assert conversation.messages[0]["role"] == "system"
    assert conversation.messages[0]["content"].startswith(rollout.base_instructions)
    assert pairing_problems(conversation.messages) == []
    calls = [c["id"] for m in conversation.messages for c in m.get("tool_calls") or ()]
    assert calls == [i["call_id"] for i in SENT if i["type"] in ("function_call", "custom_tool_call")]
    assert any(c["function"]["name"] == "apply_patch" for m in conversation.messages for c in m.get("tool_calls") or ())
    # reasoning stays in the assistant turn it belongs to, by its summary (its encrypted content in the item)
    reasoning = [p for m in conversation.messages if m["role"] == "assistant" for p in m["content"] or ()
                 if p.get("type") == "reasoning"]
    assert len(reasoning) == sum(i["type"] == "reasoning" for i in SENT) > 0
    assert all("encrypted_content" not in p and p["summary"] for p in reasoning)
    assert conversation.recorded_prompt_tokens == context_tokens(rollout.usage) > 0


def test_tokens_before_are_within_15_percent_of_the_rollouts_own_last_token_count(tmp_path):
    row, _ = compacted_run(tmp_path, FIXTURE, "quiet=true")
    assert row["tokens_recorded"] == context_tokens(replay(lines_of(FIXTURE)).usage)
    assert abs(row["tokens_before"] - row["tokens_recorded"]) <= 0.15 * row["tokens_recorded"], row


def test_an_uncompacted_rollout_is_written_back_byte_identical(tmp_path):
    row, _ = compacted_run(tmp_path, FIXTURE, "quiet=true")
    assert row["status"] == "unchanged"
    assert (tmp_path / "run" / "transcripts" / FIXTURE.name).read_bytes() == FIXTURE.read_bytes()


def test_a_compacted_line_without_replacement_history_is_rebuilt_as_codex_does():
    lines = lines_of(FIXTURE)
    last = max(i for i, line in enumerate(lines) if line["type"] == "compacted")
    before = replay(lines[:last]).history
    legacy = {**lines[last], "payload": {"message": "the summary"}}
    history = replay(lines[:last] + [legacy]).history
    first_turn = next(i for i, item in enumerate(before) if item.get("role") == "user"
                      and not item_text(item).startswith("<"))
    assert history[:first_turn] == before[:first_turn]           # the context before the first user turn
    assert [item_text(i) for i in history[first_turn:-1]] == [   # then the user messages, then the summary
        item_text(i) for i in before if i.get("role") == "user" and i in before[first_turn:]
        and not item_text(i).startswith(("<", "Another language model"))]
    assert item_text(history[-1]) == "the summary"


def test_a_rollback_drops_the_last_user_turns():
    lines = lines_of(FIXTURE)
    history = replay(lines).history
    rolled = {"timestamp": lines[-1]["timestamp"], "type": "event_msg",
              "payload": {"type": "thread_rolled_back", "num_turns": 1}}
    after = replay(lines + [rolled])
    last_turn = max(i for i, item in enumerate(history) if item.get("role") == "user"
                    and not item_text(item).startswith(("<", "Another language model")))
    assert after.history == history[:last_turn] and after.usage is None


def test_items_codex_keeps_but_we_cannot_read_are_carried_through_a_compaction(tmp_path):
    """An encrypted summary from Codex's remote compaction and a ghost snapshot are never dropped."""
    lines = lines_of(FIXTURE)
    last = max(i for i, line in enumerate(lines) if line["type"] == "compacted")
    encrypted = {"type": "compaction", "encrypted_content": "gAAAA-opaque-summary"}
    snapshot = {"type": "ghost_snapshot", "ghost_commit": {"id": "abc123", "parent": None}}
    history = lines[last]["payload"]["replacement_history"]
    lines[last] = {**lines[last], "payload": {**lines[last]["payload"],
                                              "replacement_history": [history[0], encrypted, *history[1:]]}}
    lines.insert(last + 3, {"timestamp": lines[last]["timestamp"], "type": "response_item", "payload": snapshot})
    source = tmp_path / "in" / FIXTURE.name
    source.parent.mkdir()
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    row, out = compacted_run(tmp_path, source, "model.context_length=8000", "compression.protect_last_n=6",
                             "quiet=true")
    assert row["status"] == "compacted" and row["stats"]["carried_items"] == 2
    replacement = out[-1]["payload"]["replacement_history"]
    assert replacement.count(encrypted) == 1 and replacement.count(snapshot) == 1
    summary_at = next(i for i, item in enumerate(replacement) if item_text(item).startswith(SUMMARY_PREFIX))
    assert replacement.index(encrypted) < summary_at       # the older summary before ours


def test_a_broken_line_is_quarantined_and_the_rollout_still_read(tmp_path):
    source = tmp_path / "in" / FIXTURE.name
    source.parent.mkdir()
    raw = FIXTURE.read_bytes().splitlines(keepends=True)
    source.write_bytes(b"".join(raw[:5] + [b'{"timestamp": "x", "type": "response_item", "payload": 7}\n'] + raw[5:]))
    result = run_cli(tmp_path / "run", f"input={source}", "quiet=true")
    assert result.returncode == 2, result.stderr
    rows = read_jsonl(tmp_path / "run" / "manifest.jsonl")
    assert [r["status"] for r in rows] == ["quarantined", "unchanged"]
    assert rows[0]["source"].endswith(f"{FIXTURE.name}:6") and "no 'payload' object" in rows[0]["error"]


# -- writing back --------------------------------------------------------------------

def test_a_compacted_rollout_is_codexs_own_compaction_and_codex_resumes_it(tmp_path):
    need_codex()
    row, out = compacted_run(tmp_path, FIXTURE, "model.context_length=8000", "compression.protect_last_n=6",
                             "quiet=true")
    assert row["status"] == "compacted" and row["messages_after"] < row["messages_before"]
    original = lines_of(FIXTURE)
    assert out[:-1] == original                             # every line as it was, then Codex's compaction
    compacted = out[-1]
    assert compacted["type"] == "compacted" and compacted["ordinal"] == original[-1]["ordinal"] + 1
    replacement = compacted["payload"]["replacement_history"]
    assert compacted["payload"]["message"].startswith(SUMMARY_PREFIX)
    assert call_problems(replacement) == []
    # the kept tail is the history's own items: as they were, an older output cleared (a tail over budget), or a
    # long call input shortened by the fit check (its start kept, as text)
    history = replay(original).history
    summary_at = next(i for i, item in enumerate(replacement) if item_text(item).startswith(SUMMARY_PREFIX))
    tail = replacement[summary_at + 1:]
    assert tail and len(tail) < len(history)
    for kept, was in zip(tail, history[len(history) - len(tail):]):
        cleared = kept["type"].endswith("_output") and kept["output"] == PRUNED_TOOL_OUTPUT
        shortened = kept["type"] == "custom_tool_call" and kept["input"].endswith("...[truncated]") \
            and was["input"].startswith(kept["input"].removesuffix("...[truncated]"))
        assert kept == was or (kept["type"] == was["type"] and kept["call_id"] == was["call_id"]
                               and (cleared or shortened))
    assert tail[-3:] == history[-3:]
    output = tmp_path / "resume-me" / FIXTURE.name
    output.parent.mkdir()
    output.write_text("".join(json.dumps(line) + "\n" for line in out))
    with FakeResponses(calls_per_turn=1) as fake:
        sent = sent_history(tmp_path / "codex", fake, output)
    assert [key(i) for i in sent] == [key(i) for i in replacement]     # Codex loads exactly our compaction


def test_output_format_openai_turns_a_rollout_into_an_openai_conversation(tmp_path):
    row, out = compacted_run(tmp_path, FIXTURE, "model.context_length=8000", "output.format=openai",
                             "quiet=true")
    assert row["status"] == "compacted" and len(out) == 1
    messages = out[0]["messages"]
    assert pairing_problems(messages) == []
    assert not any(k.startswith("_") for m in messages for k in m)
    parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
    assert parts and {p["type"] for p in parts} == {"text"}        # reasoning dropped, Codex's text parts as text
    assert not any('"reasoning"' in p["text"] for p in parts)


def test_a_fresh_real_rollout_of_several_mb_with_several_compactions(tmp_path):
    """A rollout nobody has seen: recorded now by the real CLI, 1-5 MB, Codex compacting on its own."""
    need_codex()
    prompts = [f"Task {i}: inspect the workspace and report on part {i}" for i in range(4)]
    with FakeResponses(calls_per_turn=8, output_size=3500) as fake:     # about 2.3 MB, Codex compacts 6 times
        rollout = record_session(tmp_path / "record", fake, prompts, auto_compact_limit=40000,
                                 last_prompts=("Task 8: the long report",))
        assert 1_000_000 <= rollout.stat().st_size <= 5_000_000
        lines = lines_of(rollout)
        assert replay(lines).compactions >= 3
        source = tmp_path / "in" / rollout.name
        source.parent.mkdir()
        shutil.copyfile(rollout, source)
        row, out = compacted_run(tmp_path, source, "model.context_length=32000", "quiet=true")
        assert row["status"] == "compacted" and row["error"] is None
        assert abs(row["tokens_before"] - row["tokens_recorded"]) <= 0.15 * row["tokens_recorded"], row
        replacement = out[-1]["payload"]["replacement_history"]
        assert call_problems(replacement) == []
        resumed = tmp_path / "resume-me" / rollout.name
        resumed.parent.mkdir()
        shutil.copyfile(tmp_path / "run" / "transcripts" / rollout.name, resumed)
        sent = sent_history(tmp_path / "codex", fake, resumed)
    assert [key(i) for i in sent] == [key(i) for i in replacement]


# -- rollouts of the built-in provider -------------------------------------------------

def with_built_in_provider(rollout: Path, folder: Path) -> Path:
    """`rollout` as a real one is: its thread's provider the built-in `openai` (the session_meta and every
    thread_settings_applied event say so), under the same name in `folder`, one compact JSON line each as Codex
    writes them."""
    def named(value):
        if isinstance(value, dict):
            return {k: BUILT_IN if k in ("model_provider", "model_provider_id") else named(v) for k, v in value.items()}
        return [named(v) for v in value] if isinstance(value, list) else value
    out = folder / rollout.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(named(line), ensure_ascii=False, separators=(",", ":")) + "\n"
                           for line in lines_of(rollout)), encoding="utf-8")
    return out


def test_codex_resumes_our_compaction_of_a_rollout_that_names_the_built_in_openai_provider(tmp_path):
    """Codex refuses to change a thread's provider on resume: the fake stands in for the built-in one
    (openai_base_url), and Codex loads exactly our compaction."""
    need_codex()
    source = with_built_in_provider(FIXTURE, tmp_path / "in")
    assert lines_of(source)[0]["payload"]["model_provider"] == "openai"
    row, out = compacted_run(tmp_path, source, "model.context_length=8000", "compression.protect_last_n=6",
                             "quiet=true")
    assert row["status"] == "compacted" and out[:-1] == lines_of(source)
    resumed = tmp_path / "resume-me" / source.name
    resumed.parent.mkdir()
    shutil.copyfile(tmp_path / "run" / "transcripts" / source.name, resumed)
    with FakeResponses(calls_per_turn=1) as fake:
        sent = sent_history(tmp_path / "codex", fake, resumed)
        looks = [r.status for r in fake.server.requests if r.method == "GET"]
    assert [key(i) for i in sent] == [key(i) for i in out[-1]["payload"]["replacement_history"]]
    assert looks == [426]      # the built-in provider asked once for a WebSocket, and was told to use HTTP


def test_the_resume_command_resumes_a_codex_rollout_and_says_what_codex_loaded(tmp_path):
    """`python -m testkit.resume ROLLOUT`: the agent told by the file, whatever its name (the copy Codex resumes
    gets the name Codex gives a rollout), each history item Codex sent printed, exit status 0; a rollout with no
    history (its session_meta alone) loads nothing, exit status 1."""
    need_codex()
    source = with_built_in_provider(FIXTURE, tmp_path / "in")
    source = source.rename(source.with_name("my-codex-session.jsonl"))
    done = subprocess.run([sys.executable, "-m", "testkit.resume", str(source)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = done.stdout.splitlines()
    assert shown[-1] == f"{len(SENT)} history item(s) sent; agent exit status 0"
    assert [line.split(":")[0].split()[1] for line in shown[:-1]] == [i.get("role") or i["type"] for i in SENT]
    assert shown[-2].endswith(item_text(SENT[-1]))         # the last item, the closing message, in full
    empty = tmp_path / "empty" / source.name
    empty.parent.mkdir()
    empty.write_text(source.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    nothing = subprocess.run([sys.executable, "-m", "testkit.resume", "--agent", "codex", str(empty)], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert nothing.returncode == 1, nothing.stdout + nothing.stderr
    assert nothing.stdout.splitlines()[-1].startswith("0 history item(s) sent")
