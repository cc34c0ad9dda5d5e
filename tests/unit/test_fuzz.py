"""Fuzz: thousands of mutated real records through the readers and the engine.

Seeds are real files of every format (the shared corpus, the fixtures, the archive
generators). Hypothesis mutates them the way real archives go wrong: keys dropped,
values of the wrong type, lines cut or with garbage bytes, roles swapped, tool results
duplicated or removed, lines duplicated, deleted, commented out. Then:
- the readers, in every format and layout: no exception, every record read or rejected;
- a whole run (the executor in-process, a small context so compaction happens): no
  conversation fails with an exception, nothing is lost (tests/accounting.py).

HERMES_FUZZ_EXAMPLES scales the number of examples (testkit.env.examples).
"""
from __future__ import annotations

import copy
import json
import math
import random
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_pipeline.formats import CONVERSATION, FORMATS, MESSAGE
from hermes_pipeline.inputs.jsonl import Rejected, read_records
from hermes_pipeline.transcript import Conversation
from testkit.accounting import check_accounting, read_rows
from testkit.archives import anthropic_export, pi_sessions, sharegpt_app
from testkit.builders import engine_for, run_in_process
from testkit.env import REAL, ROOT, TAU_BENCH, examples

DATA = ROOT / "tests" / "data" / "formats"
MAX_LINES = 24


# -- seeds: real files of every format, as lists of lines ------------------------------------------

@lru_cache(maxsize=1)
def seeds() -> tuple[tuple[bytes, ...], ...]:
    files = [TAU_BENCH, *sorted(DATA.glob("*.jsonl")), *sorted((REAL / "claude-reliability").glob("*.jsonl")),
             REAL / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"]
    folder = Path(tempfile.mkdtemp(prefix="fuzz-seeds-"))
    try:
        rng = random.Random(3)
        for writer in (anthropic_export, pi_sessions, sharegpt_app):
            files += sorted(writer(folder, rng))
        found = []
        for path in files:
            lines = [line for line in path.read_bytes().splitlines() if len(line) < 200_000]
            found.append(tuple(lines[:40]))
        return tuple(found)
    finally:
        shutil.rmtree(folder)


# -- mutations ------------------------------------------------------------------------------------

ROLES = ["user", "assistant", "tool", "system", "developer", "function", "toolResult", "human", "gpt", "x", None]
JUNK = st.sampled_from([None, 0, -1, 3.5, math.nan, math.inf, "", "\ud800", "text", [], [None], {}, {"type": None},
                        {"a": 1}, True, [{"type": "text"}], [{"type": "tool_result"}], [1, "two"]])


def _paths(value, path=()):
    """Every (container path, key) in a JSON value."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((path, key))
        found.extend(_paths(child, path + (key,)))
    return found


def _at(value, path):
    for key in path:
        value = value[key]
    return value


def _lists_of(value, test):
    """Lists inside value that hold an element passing `test`, as paths."""
    found = []
    if isinstance(value, list) and any(test(x) for x in value):
        found.append(())
    for path, key in _paths(value):
        child = _at(value, path + (key,))
        if isinstance(child, list) and any(test(x) for x in child):
            found.append(path + (key,))
    return found


def _is_result(x) -> bool:
    return isinstance(x, dict) and (x.get("role") in ("tool", "toolResult") or x.get("type") == "tool_result"
                                    or x.get("from") == "tool")


def mutate_value(draw, value):
    """One structural change of a parsed record."""
    value = copy.deepcopy(value)
    kind = draw(st.sampled_from(["drop", "retype", "role", "duplicate_result", "remove_result", "swap", "surrogate"]))
    paths = _paths(value)
    if kind in ("drop", "retype", "surrogate") and paths:
        path, key = draw(st.sampled_from(paths))
        container = _at(value, path)
        if kind == "drop":
            del container[key]
        elif kind == "retype":
            container[key] = draw(JUNK)
        elif isinstance(container[key], str):
            container[key] = container[key][:5] + "\udc80" + container[key][5:]
        return value
    if kind == "role":
        holders = [(p, k) for p, k in paths if k in ("role", "from")]
        if holders:
            path, key = draw(st.sampled_from(holders))
            _at(value, path)[key] = draw(st.sampled_from(ROLES))
        return value
    lists = _lists_of(value, _is_result) if kind != "swap" else _lists_of(value, lambda x: isinstance(x, dict))
    if not lists:
        return draw(JUNK) if kind == "swap" and not paths else value
    items = _at(value, draw(st.sampled_from(lists)))
    if kind == "swap" and len(items) > 1:
        i = draw(st.integers(0, len(items) - 2))
        items[i], items[i + 1] = items[i + 1], items[i]
    elif kind != "swap":
        i = draw(st.sampled_from([j for j, x in enumerate(items) if _is_result(x)]))
        if kind == "duplicate_result":
            items.insert(i, copy.deepcopy(items[i]))
        else:
            del items[i]
    return value


def mutate_bytes(draw, line: bytes) -> list[bytes]:
    kind = draw(st.sampled_from(["cut", "garbage", "duplicate", "delete", "comment", "blank", "bom"]))
    if kind == "cut":
        return [line[: draw(st.integers(0, max(0, len(line) - 1)))]]
    if kind == "garbage":
        at = draw(st.integers(0, len(line)))
        junk = draw(st.sampled_from([b"\xff\xfe", b"\x00", b"\xc3", b"\\ud800", b"NaN", b"}}", b'"', b"\n", b"\xef\xbb\xbf"]))
        return [line[:at] + junk + line[at:]]
    return {"duplicate": [line, line], "delete": [], "comment": [b"# " + line[:40]], "blank": [b"", line],
            "bom": [b"\xef\xbb\xbf" + line]}[kind]


@st.composite
def mutated_file(draw) -> list[bytes]:
    lines = list(draw(st.sampled_from(seeds())))
    if len(lines) > MAX_LINES:
        start = draw(st.integers(0, len(lines) - MAX_LINES))
        lines = lines[start:start + MAX_LINES] if draw(st.booleans()) else lines[:MAX_LINES]
    for _ in range(draw(st.integers(1, 5))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if draw(st.booleans()):
            try:
                value = json.loads(lines[i])
            except ValueError:
                continue
            lines[i] = json.dumps(mutate_value(draw, value)).encode()
        else:
            lines[i:i + 1] = mutate_bytes(draw, lines[i])
    return lines


# -- the checks -----------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def engine():
    return engine_for(context_length=1500, protect_last_n=2)


def write(folder: Path, lines: list[bytes]) -> Path:
    path = folder / "fuzz.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


LAYOUTS = {"openai": (CONVERSATION, MESSAGE), "anthropic": (CONVERSATION, MESSAGE), "sharegpt": (CONVERSATION,),
           "claude-code": (MESSAGE,), "pi": (MESSAGE,)}


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(mutated_file())
def test_readers_never_crash_or_lose_a_record(lines):
    folder = Path(tempfile.mkdtemp(prefix="fuzz-read-"))
    try:
        items = list(read_records(str(write(folder, lines)), 1 << 20))
    finally:
        shutil.rmtree(folder)
    for name, layouts in LAYOUTS.items():
        fmt = FORMATS[name]
        for layout in layouts:
            out = list(fmt.read(iter(items), "fuzz.jsonl", layout))
            rejected = [i for i in out if isinstance(i, Rejected)]
            conversations = [i for i in out if isinstance(i, Conversation)]
            assert all(r.reason for r in rejected)
            if layout == CONVERSATION:
                assert len(rejected) + len(conversations) == len(items), (fmt.name, layout)
            else:
                assert len(conversations) <= 1
                read = sum(c.stats.get("records", 0) for c in conversations)
                assert len(rejected) + read == len(items), (fmt.name, layout)
            writer = fmt if fmt.writable else FORMATS[fmt.write_as]
            for conversation in conversations:
                assert list(writer.write(conversation, layout if fmt.writable else CONVERSATION))


@settings(max_examples=examples(50), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(mutated_file())
def test_runs_never_crash_or_lose_a_record(lines):
    folder = Path(tempfile.mkdtemp(prefix="fuzz-run-"))
    try:
        source = write(folder, lines)
        run_dir = folder / "run"
        run_in_process(engine(), run_dir, source)
        rows = read_rows(run_dir / "manifest.jsonl")
        assert [r["error"] for r in rows if r["status"] == "failed"] == []
        assert check_accounting(run_dir, [source]) == []
    finally:
        shutil.rmtree(folder)
