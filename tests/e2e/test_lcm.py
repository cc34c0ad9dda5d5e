"""The lossless engine (engine=lcm) through the real command lines, on real transcripts.

Must hold, on tests/data/real (always) and on the shared corpus and long
sessions (skipped, saying why, when absent):
- `hermes-pipeline-lcm expand` of every conversation's record gives back exactly
  its input record: the input line's JSON value, or, for a one-conversation-per-
  file log, the JSON array of its lines' values (quarantined lines left out);
- every removed middle is stored as it was, and `grep` finds text that only the
  removed middle had, pointing at the span the summary names;
- the compacted outputs pass the same validity checks as the compressor's.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import jsonschema
import pytest

from hermes_pipeline.engine.lcm.engine import POINTER_LINE, input_record
from hermes_pipeline.engine.lcm.store import LCMStore, message_text
from hermes_pipeline.formats import detect_format_in
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.inputs.repair import repair_tool_pairing
from hermes_pipeline.transcript import Conversation, is_summary_message
from hermes_pipeline.transcript import message_text as visible_text
from testkit.builders import engine_for
from testkit.env import CORPUS, LONG_SESSIONS, REAL, TAU_BENCH, read_jsonl, run_cli, run_module, shared
from testkit.sessions import read_conversations
from testkit.synth import make_session
from testkit.validity import our_summary, problems, written_problems

LCM_CLI = Path(sys.executable).with_name("hermes-pipeline-lcm")     # the installed console script
SMALL = ("model.context_length=4000", "compression.protect_last_n=4")
COLLECTIONS = {
    "repo": (REAL, (*SMALL, "runner.concurrency=4")),     # threads share the store
    "corpus": (CORPUS, SMALL),
    "long": (LONG_SESSIONS, ("model.context_length=16000",)),
}
CLI_SAMPLE = 12          # conversations per collection checked through the grep command itself


def lcm(store: Path, *args: str, script: bool = False) -> subprocess.CompletedProcess:
    """`hermes-pipeline-lcm --store STORE ARGS`: the installed console script when `script`, else its module
    run warm (testkit.env.run_module), as most calls are: the same command, without a start-up each."""
    if not script:
        return run_module("hermes_pipeline.engine.lcm.cli", "--store", str(store), *args)
    assert LCM_CLI.exists(), f"{LCM_CLI} is missing: run `make venv` (pip install -e .)"
    return subprocess.run([str(LCM_CLI), "--store", str(store), *args], capture_output=True, text=True, timeout=300)


_runs: dict = {}


def lcm_run(tmp_path_factory, collection: str):
    """One engine=lcm run per collection (the real CLI)."""
    if collection not in _runs:
        root, overrides = COLLECTIONS[collection]
        shared(root) if collection != "repo" else None
        run_dir = tmp_path_factory.mktemp(f"lcm-{collection}") / "run"
        result = run_cli(run_dir, f"input={root}", "engine=lcm", *overrides)
        _runs[collection] = result, run_dir, root
    return _runs[collection]


def read_input(path: Path) -> list[Conversation]:
    items = list(read_records(str(path), 64 << 20))
    fmt, layout = detect_format_in(i.value for i in items if isinstance(i, Record))
    return [c for c in fmt.read(iter(items), str(path), layout) if isinstance(c, Conversation)]


def read_output(run_dir: Path, root: Path, path: Path) -> list[Conversation]:
    """What was written, read back by the reader of its format (Claude Code and pi sessions as themselves)."""
    return read_input(run_dir / "transcripts" / path.relative_to(root))


def expected_record(row: dict, quarantined: set[str]):
    """The input record, from the input file alone (not through the readers)."""
    path, line_no = row["source"].rsplit(":", 1)
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    value = lambda line: json.loads(line.lstrip("\ufeff"))
    if row["lcm_record_kind"] == "line":
        return value(lines[int(line_no) - 1])
    assert row["lcm_record_kind"] == "lines"
    return [value(line) for n, line in enumerate(lines, 1) if line.strip() and f"{path}:{n}" not in quarantined]


def rows_of(run_dir: Path) -> tuple[list[dict], set[str]]:
    rows = read_jsonl(run_dir / "manifest.jsonl")
    quarantined = {q["source"] for q in read_jsonl(run_dir / "quarantine.jsonl")}
    return [r for r in rows if r["status"] in ("compacted", "unchanged")], quarantined


def collections():
    return [pytest.param(name, id=name) for name in COLLECTIONS]


@pytest.mark.parametrize("collection", collections())
def test_every_conversation_expands_to_exactly_its_input_record(tmp_path_factory, collection):
    result, run_dir, root = lcm_run(tmp_path_factory, collection)
    rows, quarantined = rows_of(run_dir)
    all_rows = read_jsonl(run_dir / "manifest.jsonl")
    # only unreadable input lines may be set aside; no conversation fails
    assert {r["status"] for r in all_rows} - {"compacted", "unchanged"} <= {"quarantined"}, result.stderr
    assert result.returncode == (2 if quarantined else 0), result.stderr
    assert rows and {r["engine"] for r in rows} == {"lcm"} and {r["engine_fallback"] for r in rows} == {None}
    store = Path(rows[0]["lcm_store"])
    assert store == run_dir / "lcm.sqlite" and {r["lcm_store"] for r in rows} == {str(store)}
    expanded = lcm(store, "expand", "--json", *[r["lcm_record"] for r in rows])
    assert expanded.returncode == 0, expanded.stderr
    lines = expanded.stdout.splitlines()
    assert len(lines) == len(rows)          # one JSON line per record
    exact = sum(json.loads(line) == expected_record(row, quarantined) for line, row in zip(lines, rows))
    assert exact == len(rows), f"{exact}/{len(rows)} expanded exactly"
    # every input file is accounted for: a conversation per line, or one per file
    for path in sorted(root.rglob("*.jsonl")):
        mine = [r for r in rows if r["source"].rsplit(":", 1)[0] == str(path)]
        kinds = {r["lcm_record_kind"] for r in mine}
        assert kinds in ({"line"}, {"lines"}), path
        if kinds == {"line"}:
            assert len(mine) == sum(1 for line in path.read_text().splitlines() if line.strip()) - \
                len([q for q in quarantined if q.startswith(f"{path}:")])


@pytest.mark.parametrize("collection", collections())
def test_outputs_pass_the_compressors_validity_checks(tmp_path_factory, collection):
    _, run_dir, root = lcm_run(tmp_path_factory, collection)
    rows, _ = rows_of(run_dir)
    compacted = 0
    for path in sorted(root.rglob("*.jsonl")):
        before = read_input(path)
        mine = [r for r in rows if r["source"].rsplit(":", 1)[0] == str(path)]
        after = read_output(run_dir, root, path)
        assert len(after) == len(before) == len(mine), path
        for source, written, row in zip(before, after, mine):
            source = repair_tool_pairing(source)
            assert written_problems(source.format, [public(m) for m in source.messages],
                                    [public(m) for m in written.messages]) == [], source.id
            if row["status"] == "compacted":
                compacted += 1
                summary = visible_text(our_summary(source.format, written.messages))
                assert row["lcm_pointers"] and row["lcm_span"] == row["lcm_pointers"][-1]
                for pointer in row["lcm_pointers"]:
                    assert f"Stored originals: {pointer} (messages " in summary
    assert compacted >= 0.5 * len(rows)


@pytest.mark.parametrize("collection", collections())
def test_removed_middles_are_stored_exactly_and_grep_finds_what_only_they_had(tmp_path_factory, collection):
    _, run_dir, root = lcm_run(tmp_path_factory, collection)
    rows, _ = rows_of(run_dir)
    store = LCMStore(run_dir / "lcm.sqlite", readonly=True)
    checked = found_by_cli = 0
    compacted = [r for r in rows if r["status"] == "compacted"]
    for path in sorted(root.rglob("*.jsonl")):
        inputs = {c.source: repair_tool_pairing(c) for c in read_input(path)}
        # what the agent resumes from (a session written back with history=keep still holds every input line)
        out = json.dumps([c.messages for c in read_conversations(run_dir / "transcripts" / path.relative_to(root),
                                                                 repaired=False)], ensure_ascii=False)
        for row in [r for r in compacted if r["source"].rsplit(":", 1)[0] == str(path)]:
            span = store.get(row["lcm_span"])
            start, end = span["start"], span["end"]
            assert span["record"] == row["lcm_record"] and span["conversation"] == row["id"]
            assert span["messages"] == inputs[row["source"]].messages[start:end]     # exactly what was removed
            summary_messages = 0 if row["stats"].get("summary_merged_into_tail") else 1   # merged: no message of its own
            assert end - start == row["messages_before"] - row["messages_after"] + summary_messages + \
                row["stats"].get("stub_results_added", 0) - row["stats"].get("orphan_results_dropped", 0)
            needle = only_in(span["messages"], out)
            if needle is None:
                continue
            checked += 1
            hits = store.grep(needle, fixed=True)
            assert any(h.object_id == row["lcm_span"][4:] and start <= h.index < end for h in hits), needle
            if found_by_cli < CLI_SAMPLE:
                grep = lcm(run_dir / "lcm.sqlite", "grep", "-F", needle)
                assert grep.returncode == 0, grep.stderr
                fields = [line.split("\t") for line in grep.stdout.splitlines()]
                # conversation, file:line, position, role, pointer, snippet
                assert all(len(f) == 6 and f[2].startswith("message ") and f[2][8:].isdigit() for f in fields)
                assert any(f[0] == row["id"] and f[1].rsplit(":", 1)[0] == row["source"].rsplit(":", 1)[0]
                           and start <= int(f[2][8:]) < end and row["lcm_span"].startswith(f[4]) and needle in f[5]
                           for f in fields), grep.stdout
                found_by_cli += 1
    store.close()
    assert checked >= 0.8 * len(compacted), f"grep checked on {checked} of {len(compacted)} compacted"


def only_in(messages: list[dict], output: str) -> str | None:
    """A distinctive string of the removed messages that the written output doesn't have."""
    for message in messages:
        if is_summary_message(message):
            continue
        for candidate in re.findall(r"[A-Za-z0-9_./-]{12,60}", message_text(message)):
            if candidate not in output:
                return candidate
    return None


def test_the_command_line_reports_unknown_ids_bad_patterns_and_missing_stores(tmp_path_factory, tmp_path):
    _, run_dir, _ = lcm_run(tmp_path_factory, "repo")
    store = run_dir / "lcm.sqlite"
    missing = lcm(store, "expand", "lcm:" + "0" * 64, script=True)
    assert missing.returncode == 1 and "no such object" in missing.stderr
    assert lcm(store, "expand", "not-a-pointer", script=True).returncode == 1
    assert lcm(store, "grep", "-F", "a string that no transcript has, surely 8c1e", script=True).returncode == 1
    bad = lcm(store, "grep", "([unclosed", script=True)
    assert bad.returncode == 1 and "hermes-pipeline-lcm: error:" in bad.stderr     # never 2 (issue 31)
    absent = lcm(tmp_path / "none.sqlite", "list", script=True)
    assert absent.returncode == 1 and not (tmp_path / "none.sqlite").exists()    # reading never creates one
    listed = lcm(store, "list", script=True).stdout.splitlines()
    rows, _ = rows_of(run_dir)
    assert {line.split("\t")[0] for line in listed} == {r["lcm_record"][4:] for r in rows}


def test_worker_processes_write_the_same_store_and_outputs_as_threads(tmp_path_factory, tmp_path):
    _, threaded, _ = lcm_run(tmp_path_factory, "repo")
    run_dir = tmp_path / "run"
    result = run_cli(run_dir, f"input={REAL}", "engine=lcm", *SMALL, "runner.processes=2")
    assert result.returncode == 0, result.stderr
    for out in sorted((threaded / "transcripts").rglob("*.jsonl")):
        assert out.read_bytes() == (run_dir / "transcripts" / out.relative_to(threaded / "transcripts")).read_bytes()
    one, two = LCMStore(threaded / "lcm.sqlite", True), LCMStore(run_dir / "lcm.sqlite", True)
    assert one.count() == two.count() > 0 and one.count("span") == two.count("span")
    assert sorted(one.conversations()) == sorted(two.conversations())


# -- re-compaction ---------------------------------------------------------------------


def test_recompaction_through_the_cli_keeps_every_earlier_pointer(tmp_path):
    store = tmp_path / "archive" / "lcm.sqlite"
    first = tmp_path / "first"
    result = run_cli(first, f"input={TAU_BENCH}", "engine=lcm", f"lcm.store={store}", *SMALL)
    assert result.returncode == 0, result.stderr
    rows1 = read_jsonl(first / "manifest.jsonl")
    assert {r["lcm_store"] for r in rows1} == {str(store)} and not (first / "lcm.sqlite").exists()
    spans_before = {p: LCMStore(store, True).get_json(p) for r in rows1 for p in r["lcm_pointers"]}
    assert spans_before
    output1 = first / "transcripts" / TAU_BENCH.name
    second = tmp_path / "second"
    result = run_cli(second, f"input={output1}", "engine=lcm", f"lcm.store={store}",
                     "model.context_length=2000", "compression.protect_last_n=2")
    assert result.returncode == 0, result.stderr
    rows2 = read_jsonl(second / "manifest.jsonl")
    outputs1, outputs2 = read_jsonl(output1), read_jsonl(second / "transcripts" / TAU_BENCH.name)
    again = 0
    for row1, row2, before, after in zip(rows1, rows2, outputs1, outputs2):
        assert problems(before["messages"], after["messages"]) == [], row2["id"]
        if not row1["lcm_pointers"] or row2["status"] != "compacted":
            continue
        span = LCMStore(store, True).get(row2["lcm_span"])
        if not any(is_summary_message(m) for m in span["messages"]):
            continue       # the earlier summary stayed in the tail: nothing to carry
        again += 1
        summaries = [visible_text(m) for m in after["messages"] if is_summary_message(m)]
        assert len(summaries) == 1
        assert row2["lcm_pointers"][:-1] == row1["lcm_pointers"]      # kept, in order, before the new one
        for pointer in row2["lcm_pointers"]:
            assert f"Stored originals: {pointer} (messages " in summaries[0]
    assert again >= 10, f"only {again} conversations were compacted twice"
    # every pointer handed out by the first run still expands to the very same bytes
    expanded = lcm(store, "expand", "--json", *spans_before)
    assert expanded.returncode == 0
    assert [line.encode() for line in expanded.stdout.splitlines()] == list(spans_before.values())
    # and the second run's records are the first run's outputs, exactly
    records = lcm(store, "expand", "--json", *[r["lcm_record"] for r in rows2]).stdout.splitlines()
    assert [json.loads(line) for line in records] == outputs1


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    store = tmp_path_factory.mktemp("lcm-synth") / "lcm.sqlite"
    engine = engine_for(context_length=200_000, protect_last_n=20, engine="lcm", **{"lcm.store": str(store)})
    yield engine, store
    engine.close()


def test_recompaction_in_process_updates_one_summary_and_carries_its_pointers(synthetic):
    engine, _ = synthetic
    record, facts = make_session(3, n_messages=380, target_tokens=120_000)
    first = engine.compress(Conversation("s", record["messages"], "synth:1", record=record))
    assert first.outcome.compacted and first.outcome.engine == "lcm"
    assert first.outcome.summary_tokens <= 10_000
    grown, _ = make_session(98, n_messages=300, target_tokens=110_000)
    continued = first.messages + grown["messages"][3:]
    second = engine.compress(Conversation("s", continued, "synth:2"))
    assert second.outcome.compacted and second.outcome.summary_tokens <= 10_000
    assert problems(continued, second.messages) == []
    summaries = [visible_text(m) for m in second.messages if is_summary_message(m)]
    assert len(summaries) == 1
    old, new = first.outcome.extra["lcm_pointers"], second.outcome.extra["lcm_pointers"]
    assert len(old) == 1 and new[:-1] == old and new[-1] != old[0]
    assert len(POINTER_LINE.findall(summaries[0])) == 2
    assert engine.call_tool("lcm_expand", {"pointer": old[0]})["messages"] == record["messages"][
        engine.store.get(old[0])["start"]:engine.store.get(old[0])["end"]]
    # a planted fact from the first middle: gone from the context, found in the store
    lost = [f for f in facts if not any(f.text in visible_text(m) for m in second.messages)]
    for fact in lost[:5]:
        hits = engine.call_tool("lcm_grep", {"pattern": fact.text, "fixed": True})
        assert any(h["pointer"] == old[0] for h in hits), fact.text


def test_lcm_is_resolved_like_any_plugin_through_its_entry_point():
    from hermes_pipeline.engine.lcm.engine import LCMEngine
    from hermes_pipeline.engine.plugins import BUILT_IN, resolve_engine
    resolved = resolve_engine("lcm", [])
    assert "lcm" not in BUILT_IN
    assert resolved.factory is LCMEngine and resolved.fallback is None
    assert resolved.origin == "entry point hermes_pipeline.engine.lcm.engine:LCMEngine"


def test_input_record_is_defined_for_every_kind_of_input():
    lines = [{"type": "user"}, {"type": "assistant"}]
    assert input_record(Conversation("a", [], "f:1", raw_records=lines, record={"id": "a"})) == (lines, "lines")
    record = {"id": "b", "messages": [{"role": "user", "content": "x"}], "meta": 1}
    assert input_record(Conversation("b", record["messages"], "f:2", record=record)) == (record, "line")
    assert input_record(Conversation("c", record["messages"], "f:3")) == \
        ({"id": "c", "messages": record["messages"]}, "canonical")


# -- the tools an agent would call ------------------------------------------------------


def test_tool_schemas_are_valid_json_schema_and_their_calls_run(synthetic):
    engine, _ = synthetic
    tools = engine.tools()
    assert [t["function"]["name"] for t in tools] == ["lcm_grep", "lcm_expand"]
    for tool in tools:
        assert tool["type"] == "function" and tool["function"]["description"]
        schema = tool["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.Draft7Validator.check_schema(schema)
        assert schema["type"] == "object" and set(schema["required"]) <= set(schema["properties"])
    grep, expand = (jsonschema.Draft202012Validator(t["function"]["parameters"]) for t in tools)
    assert not list(grep.iter_errors({"pattern": "Traceback", "limit": 3}))
    assert list(grep.iter_errors({})) and list(grep.iter_errors({"pattern": 1})) \
        and list(grep.iter_errors({"pattern": "x", "extra": True}))
    assert list(expand.iter_errors({"pointer": "../../etc/passwd"}))
    record, _ = make_session(5, n_messages=360, target_tokens=120_000)
    compaction = engine.compress(Conversation("t", record["messages"], "synth:5"))
    pointer = compaction.outcome.extra["lcm_span"]
    assert not list(expand.iter_errors({"pointer": pointer}))
    span = engine.call_tool("lcm_expand", {"pointer": pointer})
    needle = next(c for m in span["messages"] for c in re.findall(r"[A-Za-z0-9_./-]{12,60}", message_text(m)))
    hits = engine.call_tool("lcm_grep", {"pattern": re.escape(needle), "limit": 3})
    assert 1 <= len(hits) <= 3 and any(h["pointer"] == pointer for h in hits)
    mine = next(h for h in hits if h["pointer"] == pointer)
    assert mine["conversation"] == "t" and mine["source"] == "synth:5"    # named: conversation, input, role
    assert mine["role"] == span["messages"][mine["index"] - span["start"]]["role"]


# -- the store on its own ----------------------------------------------------------------


def test_ids_are_the_sha256_of_the_canonical_json(tmp_path):
    store = LCMStore(tmp_path / "s.sqlite")
    value = {"b": [1, "é", {"z": None, "a": True}], "a": "x"}
    oid = store.put("record", value)
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert oid == hashlib.sha256(canonical).hexdigest()
    assert store.put("record", {"a": "x", "b": [1, "é", {"a": True, "z": None}]}) == oid     # same content
    assert store.count() == 1
    assert store.get_json(oid) == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()  # order kept
    assert store.get(oid[:12]) == value and store.get("lcm:" + oid) == value
    odd = {"nan": float("nan"), "surrogate": "\ud800"}
    odd_id = store.put("record", odd)
    assert json.dumps(store.get(odd_id)) == json.dumps(odd)
    store.close()


def test_threads_and_a_second_connection_write_one_store_at_once(tmp_path):
    path = tmp_path / "s.sqlite"
    stores = [LCMStore(path), LCMStore(path)]      # two connections: as two worker processes would have
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(40):
                value = {"worker": worker % 4, "i": i, "text": f"message {i} of {worker % 4}"}   # half are repeats
                stores[worker % 2].put("span", value, [(i, value["text"])])
        except BaseException as error:   # collected: an assertion in a thread would be lost
            errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert stores[0].count() == 4 * 40
    assert len(stores[1].grep("message 7 of", fixed=True)) == 4
    for store in stores:
        store.close()


# -- configuration --------------------------------------------------------------------


def test_lcm_store_is_a_known_key_with_help(tmp_path):
    from hermes_pipeline.config.validate import known_keys
    assert "lcm.store" in known_keys()
    result = subprocess.run([sys.executable, "-m", "hermes_pipeline", "--help"], capture_output=True, text=True)
    assert "lcm.store" in result.stdout and "lcm" in result.stdout.split("engine:")[1].split("\n")[0]
    typo = run_cli(tmp_path / "run", f"input={TAU_BENCH}", "engine=lcm", "lcm.stor=x")
    assert typo.returncode == 1 and "did you mean lcm.store" in typo.stderr


# -- with a model summarizer (the fake provider, over HTTP) ---------------------------------


def test_a_model_summary_and_its_fallback_both_carry_the_pointers(tmp_path):
    from hermes_pipeline.testing.fake_provider import FakeProvider, server_error
    sample = REAL.parent.parent.parent / "samples" / "tau-bench-airline.jsonl"
    with FakeProvider() as fake:
        fake.script([server_error(500)])          # one request fails: that conversation falls back
        result = run_cli(tmp_path / "run", f"input={sample}", "engine=lcm", "summarizer=anthropic", *SMALL,
                         f"auxiliary.compression.base_url={fake.base_url}", "summarizer.retry.attempts=1",
                         f"summarizer.cache.path={tmp_path / 'cache.sqlite'}",
                         env={"ANTHROPIC_API_KEY": "hermesFAKEKEYlcm0test"})
    assert result.returncode == 0, result.stderr
    rows = [r for r in read_jsonl(tmp_path / "run" / "manifest.jsonl") if r["status"] == "compacted"]
    outputs = {o["id"]: o for o in read_jsonl(tmp_path / "run" / "transcripts" / sample.name)}
    fell_back = [r for r in rows if r["fallback"]]
    assert len(fell_back) == 1 and fell_back[0]["summarizer"] == "extractive" and "500" in fell_back[0]["fallback"]
    assert {r["summarizer"] for r in rows if not r["fallback"]} == {"anthropic:claude-sonnet-4-6"}
    for row in rows:
        summary = [visible_text(m) for m in outputs[row["id"]]["messages"] if is_summary_message(m)][-1]
        assert f"Stored originals: {row['lcm_span']} (messages " in summary
        assert ("Request digest: sha256:" in summary) == (not row["fallback"])     # the model's text, or not


def test_grep_into_a_reader_that_stops_early_ends_quietly(tmp_path_factory):
    """`hermes-pipeline-lcm grep . | head -1`: no traceback when the reader goes away."""
    _, run_dir, _ = lcm_run(tmp_path_factory, "repo")
    everything = lcm(run_dir / "lcm.sqlite", "grep", ".")
    assert len(everything.stdout.encode()) > 128 << 10     # more than a pipe holds (64 KiB): the writer meets the closed end
    reader = subprocess.Popen([str(LCM_CLI), "--store", str(run_dir / "lcm.sqlite"), "grep", "."],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = reader.stdout.readline()
    reader.stdout.close()
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 0 and first.count(b"\t") == 5
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
