"""`hermes-pipeline-lcm` for people, through the real command line on real transcripts (engine=lcm runs of
tests/data/real, always, and of the shared long sessions, skipped, saying why, when absent):

- grep names the conversation, the input file and the line the message was read from, its position in the
  conversation and its role;
- expand takes a conversation id or a pointer (with --message N), prints the records as they were read,
  over several lines, without internal fields;
- show prints the compacted conversation, each summary's stored originals listed under it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hermes_pipeline.engine.lcm.store import LCMStore
from hermes_pipeline.reports.render import label
from testkit.env import read_jsonl
from tests.e2e.test_lcm import lcm, lcm_run

RULE = re.compile(r"^── (.*) ──$")
INTERNAL = ("_anthropic", "_sharegpt")
ROLE_OF_LINE = {   # what the input line a message starts on holds, per format read one conversation per file
    "claude-code": lambda value, role: value.get("type") == ("assistant" if role == "assistant" else "user"),
    "pi": lambda value, role: value.get("type") in ("message", "compaction", "branch_summary", "custom_message"),
}


def collections():
    return [pytest.param("repo", id="repo"), pytest.param("long", id="long")]


def compacted_rows(run_dir: Path) -> list[dict]:
    return [r for r in read_jsonl(run_dir / "manifest.jsonl") if r["status"] == "compacted"]


def blocks(text: str) -> list[tuple[str, str]]:
    """(header, body) per `── header ──` line of the output."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        rule = RULE.match(line)
        if rule:
            out.append((rule.group(1), []))
        elif out:
            out[-1][1].append(line)
    return [(head, "\n".join(body)) for head, body in out]


def has_internal(value) -> bool:
    if isinstance(value, dict):
        return any(k in INTERNAL or has_internal(v) for k, v in value.items())
    if isinstance(value, list):
        return any(map(has_internal, value))
    return False


@pytest.mark.parametrize("collection", collections())
def test_grep_names_conversation_file_line_position_and_role(tmp_path_factory, collection):
    _, run_dir, _ = lcm_run(tmp_path_factory, collection)
    store = LCMStore(run_dir / "lcm.sqlite", readonly=True)
    checked = 0
    for row in compacted_rows(run_dir)[:12]:
        span = store.get(row["lcm_span"])
        message = next((m for m in span["messages"] if isinstance(m.get("content"), str) and len(m["content"]) > 40),
                       None)
        if message is None:
            continue
        needle = message["content"][:40]
        result = lcm(run_dir / "lcm.sqlite", "grep", "-F", needle)
        assert result.returncode == 0, result.stderr
        hits = [line.split("\t") for line in result.stdout.splitlines()]
        ours = [h for h in hits if row["lcm_span"].startswith(h[4])]
        assert ours, result.stdout
        conversation, where, position, role, _, snippet = ours[0]
        index = int(position.removeprefix("message "))
        assert conversation == row["id"] and span["start"] <= index < span["end"]
        assert role == label(span["messages"][index - span["start"]]) and " ".join(needle.split())[:20] in snippet
        path, line = where.rsplit(":", 1)
        assert path == row["source"].rsplit(":", 1)[0]
        value = json.loads(Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1].lstrip("\ufeff"))
        if row["lcm_record_kind"] == "line":          # one conversation per line: its own line
            assert where == row["source"]
        elif row["format"] in ROLE_OF_LINE:           # one per file: the line the message's turn starts on
            assert ROLE_OF_LINE[row["format"]](value, role), (where, role)
        checked += 1
    store.close()
    assert checked >= 3


@pytest.mark.parametrize("collection", collections())
def test_expand_gives_a_conversations_records_as_read_over_several_lines(tmp_path_factory, collection):
    _, run_dir, _ = lcm_run(tmp_path_factory, collection)
    rows = sorted(compacted_rows(run_dir), key=lambda r: -r["tokens_before"])[:3]     # the longest
    for row in rows:
        result = lcm(run_dir / "lcm.sqlite", "expand", row["id"])
        assert result.returncode == 0, result.stderr
        exact = json.loads(lcm(run_dir / "lcm.sqlite", "expand", "--json", row["lcm_record"]).stdout)
        found = blocks(result.stdout)
        assert found[0][0].startswith(f"{row['lcm_record'][:16]} · conversation {row['id']} · {row['source']}")
        values = [json.loads(body) for _, body in found[1:]] if isinstance(exact, list) else [json.loads(found[0][1])]
        assert values == (exact if isinstance(exact, list) else [exact])      # the records, as read
        assert max(map(len, result.stdout.splitlines())) < max(len(json.dumps(v)) for v in values) or \
            len(result.stdout.splitlines()) > 2 * len(values)                  # over several lines, not one


@pytest.mark.parametrize("collection", collections())
def test_expand_a_pointer_or_one_of_its_messages_as_the_input_had_it(tmp_path_factory, collection):
    _, run_dir, _ = lcm_run(tmp_path_factory, collection)
    store = LCMStore(run_dir / "lcm.sqlite", readonly=True)
    for row in compacted_rows(run_dir)[:5]:
        span = store.get(row["lcm_span"])
        assert has_internal(span["messages"]) == (row["format"] != "openai")    # the store keeps them ...
        whole = lcm(run_dir / "lcm.sqlite", "expand", row["lcm_span"])
        assert whole.returncode == 0, whole.stderr
        found = blocks(whole.stdout)
        assert f"messages {span['start']}-{span['end'] - 1} of conversation {row['id']}" in found[0][0]
        shown = [json.loads(body) for _, body in found[1:]]
        assert shown and not any(map(has_internal, shown))                      # ... expand never shows them
        numbers = [re.match(r"messages? (\d+)(?:-(\d+))? · (\w+) · (.+)$", head).groups() for head, _ in found[1:]]
        positions = [p for first, last, _, _ in numbers for p in range(int(first), int(last or first) + 1)]
        assert positions == list(range(span["start"], span["end"]))            # every removed message, once
        middle = (span["start"] + span["end"]) // 2
        one = lcm(run_dir / "lcm.sqlite", "expand", row["lcm_span"], "--message", str(middle))
        assert one.returncode == 0, one.stderr
        [(head, body)] = blocks(one.stdout)[1:]
        first, last = re.match(r"messages? (\d+)(?:-(\d+))?", head).groups()
        assert int(first) <= middle <= int(last or first) and json.loads(body) in shown
    store.close()
    outside = lcm(run_dir / "lcm.sqlite", "expand", row["lcm_span"], "--message", str(span["end"] + 5))
    assert outside.returncode == 1 and f"not message {span['end'] + 5}" in outside.stderr
    wrong = lcm(run_dir / "lcm.sqlite", "expand", row["id"], "--message", "3")
    assert wrong.returncode == 1 and "--message N takes a pointer" in wrong.stderr


@pytest.mark.parametrize("collection", collections())
def test_show_prints_the_compacted_conversation_with_each_summarys_originals_under_it(tmp_path_factory, collection):
    _, run_dir, _ = lcm_run(tmp_path_factory, collection)
    store = LCMStore(run_dir / "lcm.sqlite", readonly=True)
    for row in compacted_rows(run_dir)[:5]:
        result = lcm(run_dir / "lcm.sqlite", "show", row["id"], "--source", row["source"])
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].startswith(f"── conversation {row['id']} · {row['source']} · compacted to "
                                   f"{row['messages_after']} messages")
        numbered = [line for line in lines if re.match(r"^(?:» |  )[ \d]{4}\d (system|user|assistant|tool|summary) ", line)]
        assert [int(line[2:].split()[0]) for line in numbered] == list(range(row["messages_after"]))
        start = lines.index("        stored originals:")
        owner = [line for line in lines[:start] if line in numbered][-1]
        assert owner.startswith("» ") and " summary " in owner[:18]                     # under its summary
        for pointer in row["lcm_pointers"]:
            span = store.get(pointer)
            head = next(i for i, line in enumerate(lines) if line.strip().startswith(pointer[:16] + "  messages"))
            assert f"messages {span['start']}-{span['end'] - 1} ({len(span['messages'])})" in lines[head]
            listed = [int(line.split()[0]) for line in lines[head + 1:head + 1 + len(span["messages"])]]
            assert listed == list(range(span["start"], span["end"]))
    store.close()
    missing = lcm(run_dir / "lcm.sqlite", "show", "no-such-conversation")
    assert missing.returncode == 1 and "no conversation of that id" in missing.stderr
