"""Bad input never stops a run and is never lost: each case through the real command line.

One run reads a folder of broken files (exit status 2), another the inputs that are
repaired or carried through unchanged (BOM, NaN, lone surrogates, calls without
results: exit status 0). Every quarantined record names its file and line and keeps
its raw bytes; the record counts add up (tests/accounting.py).
"""
from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_pipeline.testing.fake_provider import FakeProvider
from testkit.accounting import check_accounting, read_rows
from testkit.env import ROOT, read_jsonl, run_cli
from testkit.validity import problems

SMALL = ("model.context_length=4000", "compression.protect_last_n=4")


def chat(conversation_id: str, turns: int = 2, **extra) -> dict:
    messages = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        messages += [{"role": "user", "content": f"question {i} " + "details " * 40},
                     {"role": "assistant", "content": f"answer {i} " + "words " * 40}]
    return {"id": conversation_id, "messages": messages, **extra}


def call(call_id: str, command: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": command})}}]}


def line(value) -> str:
    return json.dumps(value)


def by_line(run_dir: Path, name: str) -> dict[int, dict]:
    return {int(r["source"].rsplit(":", 1)[1]): r for r in read_rows(run_dir / "manifest.jsonl")
            if Path(r["source"].rsplit(":", 1)[0]).name == name}


def quarantine(run_dir: Path, name: str) -> dict[int, dict]:
    return {int(q["source"].rsplit(":", 1)[1]): q for q in read_rows(run_dir / "quarantine.jsonl")
            if Path(q["source"].rsplit(":", 1)[0]).name == name}


# -- the broken files -------------------------------------------------------------------------

BROKEN: dict[str, list[bytes]] = {
    "malformed.jsonl": [line(chat("m1")).encode(), b'{"id": "broken", "messages": [{"role": "user"',
                        b'{"id": "m3", "messages": []] }', line(chat("m4")).encode()],
    "not_a_conversation.jsonl": [line(chat("n1")).encode(), b'{"foo": 1, "bar": [2]}', b"42", b'"just text"',
                                 b"null", b"[1, 2, 3]", b"true", b'{"messages": "not a list"}'],
    "comments.jsonl": [b"# exported 2026-01-01 by chat-dump", line(chat("c1")).encode(),
                       b"// the next one is the long session", line(chat("c2")).encode()],
    "invalid_utf8.jsonl": [line(chat("u1")).encode(),
                           b'{"id": "u2", "messages": [{"role": "user", "content": "caf\xe9 \xff\xfe"}]}',
                           line(chat("u3")).encode()],
    "bad_content.jsonl": [
        line({"id": "dict", "messages": [{"role": "user", "content": {"text": "hi"}}]}).encode(),
        line({"id": "number", "messages": [{"role": "user", "content": 42}]}).encode(),
        line({"id": "null", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": None}]}).encode(),
        line({"id": "tool-null", "messages": [{"role": "user", "content": "go"}, call("c1", "ls"),
                                              {"role": "tool", "tool_call_id": "c1", "content": None}]}).encode(),
        line(chat("fine")).encode(),
        line({"id": "assistant-null-with-calls", "messages": [{"role": "user", "content": "go"}, call("c1", "ls"),
                                                              {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}).encode(),
    ],
    "anthropic_bad_content.jsonl": [
        line({"role": "user", "content": "list the files"}).encode(),
        line({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash",
                                               "input": {"command": "ls"}}]}).encode(),
        line({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]}).encode(),
        line({"role": "assistant", "content": {"type": "text", "text": "a dict"}}).encode(),
        line({"role": "assistant", "content": 7}).encode(),
        line({"role": "assistant", "content": None}).encode(),
        line({"role": "assistant", "content": "There is one file, a.py."}).encode(),
    ],
    "orphan_result.jsonl": [
        line({"id": "orphan", "messages": [{"role": "user", "content": "go"},
                                           {"role": "tool", "tool_call_id": "ghost", "content": "result of nothing"},
                                           {"role": "assistant", "content": "done"}]}).encode(),
        line(chat("after-orphan")).encode(),
    ],
    "unknown_format.jsonl": [b'{"event": "click", "x": 1}', b'{"event": "scroll", "y": 2}'],
    "empty.jsonl": [],
    "blank_lines.jsonl": [b"", b"   ", b"\t"],
}


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken")
    inputs = root / "in"
    inputs.mkdir()
    for name, lines in BROKEN.items():
        (inputs / name).write_bytes(b"".join(x + b"\n" for x in lines) if lines else b"")
    result = run_cli(root / "run", f"input={inputs}", *SMALL)
    return result, root / "run", inputs


def test_broken_run_finishes_with_status_2_and_loses_nothing(broken_run):
    result, run_dir, inputs = broken_run
    assert result.returncode == 2, result.stderr
    assert "quarantined" in result.stderr
    assert check_accounting(run_dir, sorted(inputs.glob("*.jsonl"))) == []


LATE = 60   # good lines first: the broken ones come after the format detection, parsed where compacted
LATE_FILES = ("malformed.jsonl", "not_a_conversation.jsonl", "comments.jsonl", "invalid_utf8.jsonl",
              "bad_content.jsonl", "orphan_result.jsonl")


@pytest.mark.parametrize("runner", ["runner.processes=1", "runner.processes=2"])
def test_bad_lines_after_the_detection_window_are_set_aside_as_the_first_ones_are(tmp_path, broken_run, runner):
    _, early_run, _ = broken_run
    inputs = tmp_path / "in"
    inputs.mkdir()
    good = [line(chat(f"pre{i}", turns=1)).encode() for i in range(LATE)]
    for name in LATE_FILES:
        (inputs / name).write_bytes(b"".join(x + b"\n" for x in good + BROKEN[name] + [b"", b"  "]))
    result = run_cli(tmp_path / "run", f"input={inputs}", *SMALL, runner)
    assert result.returncode == 2, result.stderr
    assert check_accounting(tmp_path / "run", sorted(inputs.glob("*.jsonl"))) == []
    without_place = lambda q: {k: v for k, v in q.items() if k not in ("source", "reason")} | {
        "reason": q["reason"].split(": ", 1)[1]}
    for name in LATE_FILES:
        late, early = quarantine(tmp_path / "run", name), quarantine(early_run, name)
        assert sorted(late) == [n + LATE for n in sorted(early)], name
        assert [without_place(late[n + LATE]) for n in sorted(early)] == [without_place(early[n]) for n in sorted(early)]
        statuses = lambda rows, shift: {n - shift: (r["status"], r["id"], r["messages_before"]) for n, r in rows.items()
                                        if n > shift}
        assert statuses(by_line(tmp_path / "run", name), LATE) == statuses(by_line(early_run, name), 0), name


def test_malformed_json(broken_run):
    _, run_dir, inputs = broken_run
    q = quarantine(run_dir, "malformed.jsonl")
    assert sorted(q) == [2, 3]
    assert q[2]["reason"].startswith(f"{inputs / 'malformed.jsonl'}:2: malformed JSON: ")
    assert q[3]["reason"].startswith(f"{inputs / 'malformed.jsonl'}:3: malformed JSON: ")
    assert q[2]["raw"] == BROKEN["malformed.jsonl"][1].decode()
    rows = by_line(run_dir, "malformed.jsonl")
    assert rows[1]["status"] in ("compacted", "unchanged") and rows[4]["status"] in ("compacted", "unchanged")


def test_malformed_json_reasons_read_as_one_sentence():
    """The standard library's messages, some ending in "at", each once followed by the column."""
    from hermes_pipeline.inputs.jsonl import parse_line
    reasons = {raw: parse_line("chats.jsonl", 7, raw).reason
               for raw in (b'{"a": "never closed', b'{"a" 1}', b'{"a": 1} trailing', b'{"a": "\\q"}')}
    assert reasons == {
        b'{"a": "never closed': "malformed JSON: Unterminated string starting at column 7",
        b'{"a" 1}': "malformed JSON: Expecting ':' delimiter at column 6",
        b'{"a": 1} trailing': "malformed JSON: Extra data at column 10",
        b'{"a": "\\q"}': "malformed JSON: Invalid \\escape at column 8",
    }


def test_json_that_is_not_a_conversation(broken_run):
    _, run_dir, _ = broken_run
    q = quarantine(run_dir, "not_a_conversation.jsonl")
    assert sorted(q) == [2, 3, 4, 5, 6, 7, 8]
    reasons = {n: q[n]["reason"].split(": ", 1)[1] for n in q}
    assert reasons[2] == "record has no 'messages' list"
    assert "int" in reasons[3] and "str" in reasons[4] and "NoneType" in reasons[5]
    assert "list" in reasons[6] and "bool" in reasons[7] and "'messages' list" in reasons[8]
    assert [q[n]["raw"] for n in sorted(q)] == [x.decode() for x in BROKEN["not_a_conversation.jsonl"][1:]]


def test_comment_lines(broken_run):
    _, run_dir, _ = broken_run
    q = quarantine(run_dir, "comments.jsonl")
    assert sorted(q) == [1, 3] and all("comment line" in q[n]["reason"] for n in q)
    assert q[1]["raw"] == "# exported 2026-01-01 by chat-dump"
    assert len(read_jsonl(run_dir / "transcripts" / "comments.jsonl")) == 2


def test_invalid_utf8_keeps_the_exact_bytes(broken_run):
    _, run_dir, _ = broken_run
    (q,) = quarantine(run_dir, "invalid_utf8.jsonl").values()
    assert q["source"].endswith(":2") and "invalid UTF-8 at byte" in q["reason"]
    assert base64.b64decode(q["raw_base64"]) == BROKEN["invalid_utf8.jsonl"][1]


def test_content_that_is_a_dict_a_number_or_null(broken_run):
    _, run_dir, _ = broken_run
    q = quarantine(run_dir, "bad_content.jsonl")
    assert sorted(q) == [1, 2, 3, 4]
    assert "content is a dict" in q[1]["reason"] and "content is a int" in q[2]["reason"]
    assert "message 1 (user) content is null" in q[3]["reason"]
    assert "message 2 (tool) content is null" in q[4]["reason"]
    rows = by_line(run_dir, "bad_content.jsonl")
    assert rows[5]["status"] in ("compacted", "unchanged") and rows[6]["status"] in ("compacted", "unchanged")


def test_anthropic_messages_with_bad_content(broken_run):
    _, run_dir, _ = broken_run
    q = quarantine(run_dir, "anthropic_bad_content.jsonl")
    assert sorted(q) == [4, 5, 6]
    assert "content is a dict" in q[4]["reason"] and "content is a int" in q[5]["reason"]
    assert "content is a NoneType" in q[6]["reason"]
    (row,) = [r for r in by_line(run_dir, "anthropic_bad_content.jsonl").values() if r["status"] != "quarantined"]
    assert row["format"] == "anthropic" and row["stats"]["records"] == 4


def test_tool_result_without_a_call_gets_a_placeholder_call(broken_run):
    _, run_dir, _ = broken_run
    assert quarantine(run_dir, "orphan_result.jsonl") == {}
    rows = by_line(run_dir, "orphan_result.jsonl")
    assert rows[1]["repairs"] == ["added 1 placeholder call(s) for tool results that had none"]
    assert rows[2]["status"] in ("compacted", "unchanged")
    written = [json.loads(x) for x in (run_dir / "transcripts" / "orphan_result.jsonl").read_text().splitlines()]
    assert written[0]["messages"][2] == {"role": "tool", "tool_call_id": "ghost", "content": "result of nothing"}
    assert written[0]["messages"][1]["tool_calls"][0]["id"] == "ghost"      # behind a placeholder call


def test_unknown_format_and_empty_files(broken_run):
    _, run_dir, inputs = broken_run
    q = quarantine(run_dir, "unknown_format.jsonl")
    assert sorted(q) == [1, 2] and all("unknown transcript format" in x["reason"] for x in q.values())
    assert q[1]["raw"] == '{"event": "click", "x": 1}'
    for name in ("empty.jsonl", "blank_lines.jsonl"):
        (row,) = by_line(run_dir, name).values()
        assert row["status"] == "quarantined" and row["error"] == f"{inputs / name}:0: empty file: no records"
        assert not (run_dir / "transcripts" / name).exists()


# -- repaired or carried through: the run is clean --------------------------------------------

SURROGATES = "lone \ud800 high, \udfff low, \ud83d cut emoji"


def long_session(conversation_id: str, last_words: str, first_words: str = "Fix the build.") -> dict:
    messages = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": first_words}]
    for i in range(14):
        messages += [call(f"c{i}", f"make step{i}"),
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"step {i} output\n" * 60},
                     {"role": "assistant", "content": f"Step {i} is done."},
                     {"role": "user", "content": f"Go on with step {i + 1}."}]
    messages.append({"role": "assistant", "content": last_words})
    return {"id": conversation_id, "messages": messages}


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    inputs = root / "in"
    inputs.mkdir()
    (inputs / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + line(chat("bom-1")).encode() + b"\n"
                                       + line(chat("bom-2")).encode() + b"\n")
    nan = long_session("nan", "done")
    nan["metadata"] = {"score": float("nan"), "best": float("inf"), "worst": float("-inf")}
    nan["messages"][-1]["logprob"] = float("nan")
    small_nan = {**chat("nan-small"), "temperature": float("nan")}
    (inputs / "nan.jsonl").write_text(json.dumps(nan) + "\n" + json.dumps(small_nan) + "\n")
    surrogate = long_session("surrogates", f"Last words: {SURROGATES}", first_words=f"First: {SURROGATES}")
    small = {"id": "surrogate-small", "messages": [{"role": "user", "content": SURROGATES},
                                                   {"role": "assistant", "content": "ok \udc00"}]}
    (inputs / "surrogates.jsonl").write_text(json.dumps(surrogate) + "\n" + json.dumps(small) + "\n")
    unanswered = {"id": "unanswered", "messages": [{"role": "user", "content": "run it"}, call("c9", "make"),
                                                   {"role": "user", "content": "never mind"},
                                                   {"role": "assistant", "content": "ok"}]}
    (inputs / "unanswered.jsonl").write_text(json.dumps(unanswered) + "\n")
    result = run_cli(root / "run", f"input={inputs}", *SMALL)
    return result, root / "run", inputs


def test_clean_run_exits_0_and_loses_nothing(clean_run):
    result, run_dir, inputs = clean_run
    assert result.returncode == 0, result.stderr
    assert (run_dir / "quarantine.jsonl").read_text() == ""
    assert check_accounting(run_dir, sorted(inputs.glob("*.jsonl"))) == []


def test_bom_is_removed_and_noted(clean_run):
    _, run_dir, _ = clean_run
    rows = by_line(run_dir, "bom.jsonl")
    assert rows[1]["repairs"] == ["removed UTF-8 byte order mark"] and rows[2]["repairs"] == []
    assert not (run_dir / "transcripts" / "bom.jsonl").read_bytes().startswith(b"\xef\xbb\xbf")
    assert [o["id"] for o in read_jsonl(run_dir / "transcripts" / "bom.jsonl")] == ["bom-1", "bom-2"]


def test_nan_round_trips_as_nan_not_null(clean_run):
    _, run_dir, inputs = clean_run
    text = (run_dir / "transcripts" / "nan.jsonl").read_text()
    assert "NaN" in text and "Infinity" in text and "-Infinity" in text
    out, small = [json.loads(x) for x in text.splitlines()]
    assert math.isnan(out["metadata"]["score"]) and out["metadata"]["best"] == math.inf
    assert out["metadata"]["worst"] == -math.inf and math.isnan(out["messages"][-1]["logprob"])
    assert math.isnan(small["temperature"])
    rows = by_line(run_dir, "nan.jsonl")
    assert rows[1]["status"] == "compacted" and "NaN/Infinity" in rows[1]["repairs"][0]


def test_lone_surrogates_round_trip_unchanged(clean_run):
    _, run_dir, inputs = clean_run
    source = [json.loads(x) for x in (inputs / "surrogates.jsonl").read_text().splitlines()]
    out = [json.loads(x) for x in (run_dir / "transcripts" / "surrogates.jsonl").read_text().splitlines()]
    rows = by_line(run_dir, "surrogates.jsonl")
    assert rows[1]["status"] == "compacted" and "lone surrogate" in rows[1]["repairs"][0]
    assert problems(source[0]["messages"], out[0]["messages"]) == []
    assert out[0]["messages"][1]["content"].endswith(SURROGATES)          # head
    last = out[0]["messages"][-1]["content"]
    assert (last if isinstance(last, str) else last[0]["text"]) == f"Last words: {SURROGATES}"   # tail
    assert rows[2]["status"] == "unchanged" and out[1] == source[1]
    assert "\\ud800" in (run_dir / "transcripts" / "surrogates.jsonl").read_text()


def test_lone_surrogates_do_not_stop_an_llm_summarizer(tmp_path, clean_run):
    """An API can't take lone surrogates: the request gets U+FFFD, the transcript keeps them."""
    _, _, inputs = clean_run
    with FakeProvider() as fake:
        result = run_cli(tmp_path / "run", f"input={inputs / 'surrogates.jsonl'}", *SMALL, "summarizer=anthropic",
                         f"auxiliary.compression.base_url={fake.base_url}",
                         f"summarizer.cache.path={tmp_path / 'cache.sqlite'}", env={"ANTHROPIC_API_KEY": "fake-key"})
        sent = [json.dumps(r["body"]) for r in fake.requests]
    assert result.returncode == 0, result.stderr
    rows = read_rows(tmp_path / "run" / "manifest.jsonl")
    assert (rows[0]["summarizer"], rows[0]["fallback"]) == ("anthropic:claude-sonnet-4-6", None)   # the default model is retired
    assert sent and "\\ufffd" in sent[0]
    out = json.loads((tmp_path / "run" / "transcripts" / "surrogates.jsonl").read_text().splitlines()[0])
    assert out["messages"][1]["content"].endswith(SURROGATES)


def test_calls_without_results_get_a_noted_stub(clean_run):
    _, run_dir, _ = clean_run
    (row,) = by_line(run_dir, "unanswered.jsonl").values()
    assert row["status"] == "unchanged" and row["repairs"] == ["added 1 stub result(s) for tool calls that had none"]
    (out,) = read_jsonl(run_dir / "transcripts" / "unanswered.jsonl")
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool", "user", "assistant"]
    assert out["messages"][2]["tool_call_id"] == "c9"


# -- records over input.max_record_bytes ----------------------------------------------------------

def test_a_record_over_the_limit_is_quarantined_raw_and_the_run_goes_on(tmp_path):
    big = line(chat("big", turns=40))
    assert len(big) > 4096
    source = tmp_path / "big.jsonl"
    source.write_text(line(chat("small-1")) + "\n" + big + "\n" + line(chat("small-2")) + "\n")
    result = run_cli(tmp_path / "run", f"input={source}", "input.max_record_bytes=4096")
    assert result.returncode == 2
    (q,) = read_rows(tmp_path / "run" / "quarantine.jsonl")
    assert q["reason"] == (f"{source}:2: record of {len(big)} bytes is larger than input.max_record_bytes "
                           "(4096 bytes)")
    assert q["raw"] == big
    assert [o["id"] for o in read_jsonl(tmp_path / "run" / "transcripts" / "big.jsonl")] == ["small-1", "small-2"]
    assert check_accounting(tmp_path / "run", [source]) == []


# VmHWM, not ru_maxrss: Linux carries the forking parent's peak (a big pytest worker) over exec
PEAK_RSS = textwrap.dedent("""
    import sys
    from hermes_pipeline.cli import main
    sys.argv = ["hermes-pipeline", *sys.argv[1:]]
    try:
        main()
    except SystemExit as exit:
        code = exit.code
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    print("PEAK_RSS_KB", peak, file=sys.stderr)
    sys.exit(code)
""")


def peak_rss_run(run_dir: Path, source: Path, limit: int) -> tuple[int, int]:
    """(exit status, peak resident set size in bytes) of the real CLI in its own process."""
    command = [sys.executable, "-c", PEAK_RSS, f"hydra.run.dir={run_dir}", "progress=none", f"input={source}",
               f"input.max_record_bytes={limit}"]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    peak = int(result.stderr.rsplit("PEAK_RSS_KB", 1)[1].split()[0]) * 1024
    return result.returncode, peak


def test_memory_stays_bounded_on_a_200_mb_line(tmp_path):
    line_bytes, limit = 200 << 20, 8 << 20
    head = b'{"id": "huge", "messages": [{"role": "user", "content": "'
    tail = b'"}]}'
    huge = tmp_path / "huge.jsonl"
    with open(huge, "wb") as handle:
        handle.write(line(chat("before")).encode() + b"\n" + head)
        chunk = b"0123456789abcdef" * (1 << 16)                     # 1 MiB
        for _ in range((line_bytes - len(head) - len(tail)) // len(chunk)):
            handle.write(chunk)
        handle.write(tail + b"\n" + line(chat("after")).encode() + b"\n")
    small = tmp_path / "small.jsonl"
    small.write_text(line(chat("before")) + "\n" + line(chat("after")) + "\n")

    code, peak = peak_rss_run(tmp_path / "run", huge, limit)
    _, baseline = peak_rss_run(tmp_path / "baseline", small, limit)
    assert code == 2
    # the line is read up to the limit, then skipped and copied to the quarantine in chunks
    assert peak - baseline < 3 * limit, (peak, baseline)
    assert peak < line_bytes // 2, (peak, baseline)
    run_dir = tmp_path / "run"
    assert [o["id"] for o in read_jsonl(run_dir / "transcripts" / "huge.jsonl")] == ["before", "after"]
    rows = read_rows(run_dir / "manifest.jsonl")
    assert [r["status"] for r in rows] == ["unchanged", "quarantined", "unchanged"]
    assert "is larger than input.max_record_bytes (8388608 bytes)" in rows[1]["error"]
    # the quarantined line is there whole: its JSON string is the line with its quotes escaped
    with open(run_dir / "quarantine.jsonl", "rb") as handle:
        start = handle.read(4096)
        size = handle.seek(0, 2)
    raw_size = (huge.stat().st_size - len(line(chat("before"))) - len(line(chat("after"))) - 3)
    assert start.startswith(b'{"source":"' + f"{huge}:2".encode()) and f'"raw_bytes":{raw_size}'.encode() in start
    escaped = raw_size + head.count(b'"') + tail.count(b'"')
    assert size == len(start[:start.index(b',"raw":"') + 8]) + escaped + len(b'"}\n')


def test_an_unknown_format_name_is_a_config_error(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(line(chat("x")) + "\n")
    for override in ("input.format=csv", "output.format=xml"):
        result = run_cli(tmp_path / override.split(".")[0], f"input={source}", override)
        assert result.returncode == 1 and "is not allowed: must be one of" in result.stderr
        assert override.split("=")[0] in result.stderr
        assert "Traceback" not in result.stderr


def test_a_log_line_quoting_a_lone_surrogate_is_written_escaped(tmp_path):
    """Text of a broken record (a JSON \\udc80 escape) in a log line: the line is written, escaped."""
    import logging
    log = logging.getLogger("hermes_pipeline.test_surrogates")
    handler = logging.FileHandler(tmp_path / "run.log", encoding="utf-8")
    log.addHandler(handler)
    try:
        log.warning("conversation %s set aside", "conv-\udc80-1")
        log.warning("a fine line: %s", "é")
    finally:
        log.removeHandler(handler)
        handler.close()
    assert (tmp_path / "run.log").read_text(encoding="utf-8") == \
        "conversation conv-\\udc80-1 set aside\na fine line: é\n"
    # other loggers are left as they are
    other = logging.getLogger("elsewhere").makeRecord("elsewhere", logging.INFO, "f", 1, "%s", ("\udc80",), None)
    assert other.getMessage() == "\udc80"


def test_the_cli_log_names_a_record_whose_role_holds_a_lone_surrogate(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "messages": [{"role": "user", "content": "hi"}, '
                      '{"role": "assis\\udc80tant", "content": null}]}\n')
    result = run_cli(tmp_path / "run", f"input={source}")
    assert result.returncode == 2 and "Logging error" not in result.stderr
    log = (tmp_path / "run" / "cli.log").read_text(encoding="utf-8")
    assert f"quarantined: {source}:1: message 1 (assis\\udc80tant) content is null" in log
