"""Hermes' state.db as a transcript format: each session's live history is a conversation.

A session is read as Hermes resumes it (its system prompt from the `sessions`
row, then its active message rows in id order), each message marked with the
row it came from. A compaction is written as one change line (`apply` in
store.py takes it): the rows it replaces, and the new active rows (kept
messages with their row's other fields, the summary, stubs). The summary
opens with Hermes' legacy summary prefix, which Hermes' compressor still
recognises as a previous summary (and strips), so its next compaction updates
ours instead of summarizing it again.
"""
from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any, Iterable, Iterator

from hermes_pipeline.formats.anthropic import KEY
from hermes_pipeline.formats.base import TranscriptFormat, Written, bad_content_reason
from hermes_pipeline.formats.hermes_store import store
from hermes_pipeline.formats.native import unmarked
from hermes_pipeline.formats.roundtrip import kept_if_unchanged, private, public, tag
from hermes_pipeline.inputs.jsonl import Rejected
from hermes_pipeline.transcript import Conversation, text_of

STORE = "store"                          # the layout: sessions of a SQLite store
SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"    # Hermes' legacy prefix: matched and stripped by its compressor


class StoreLog:
    """What writing a session back needs: which rows it replaces, and the prompt it had."""

    def __init__(self, session_id: str, replaces: list[int], system_prompt: str | None):
        self.session_id, self.replaces, self.system_prompt = session_id, replaces, system_prompt


def _conversation(path: Path, index: int, session: dict, rows: list[dict], recorded: int | None):
    messages = []
    if session.get("system_prompt"):
        messages.append({"role": "system", "content": session["system_prompt"]})
    for number, row in enumerate(rows):
        message = store.row_message(row)
        messages.extend(tag([message], KEY, number, row, [row]))
    for i, message in enumerate(messages):
        problem = bad_content_reason(public(message), i)
        if problem:
            return Rejected(str(path), index, f"session {session['id']}: {problem}")
    conversation = Conversation(
        id=session["id"], messages=messages, source=f"{path}:{index}", format=HermesStoreFormat.name, layout=STORE,
        record={"id": session["id"], "metadata": {"source_format": "hermes-store", "model": session.get("model"),
                                                  "source": session.get("source"), "title": session.get("title")}},
        recorded_prompt_tokens=recorded, stats={"records": len(rows)},
        native=StoreLog(session["id"], [r["id"] for r in rows], session.get("system_prompt")))
    conversation.digest = store.digest(session["id"], session.get("system_prompt"), rows)
    return conversation


def _row(message: dict, previous: dict | None) -> dict:
    """The row to insert for an output message: its source row's fields, with what the engine changed."""
    mark = private(message, KEY)
    row = dict(mark["kept"]) if mark and isinstance(mark.get("kept"), dict) else {}
    clean = public(message)
    if not (mark and kept_if_unchanged(message, KEY)[0]):
        row.update(role=clean["role"], content=clean.get("content"), tool_calls=clean.get("tool_calls"),
                   tool_call_id=clean.get("tool_call_id"), tool_name=clean.get("tool_name", row.get("tool_name")))
    row = {name: row.get(name) for name in store.ROW_FIELDS}
    if row["timestamp"] is None:
        row["timestamp"] = previous["timestamp"] if previous else 0.0
    return row


class HermesStoreFormat(TranscriptFormat):
    name = "hermes-store"
    native = True

    def detect(self, value: Any) -> str | None:
        return None                      # a store is found by its file (store.is_store), never by a JSON line

    def read(self, items: Iterable[Any], path: str, layout: str) -> Iterator[Conversation | Rejected]:
        raise ValueError("a Hermes store is read with read_store(path), not line by line")

    def read_store(self, path: Path) -> Iterator[Conversation | Rejected]:
        with closing(store.connect(path, read_only=True)) as db:
            for index, (session, rows) in enumerate(store.session_rows(db), 1):
                yield _conversation(path, index, session, rows, store.recorded_prompt_tokens(db, session["id"]))

    def write(self, conversation: Conversation, layout: str) -> Iterator[Any]:
        """A session as a record of its own (the quarantine keeps a session that failed this way)."""
        yield {"session_id": conversation.id, "messages": [public(m) for m in conversation.messages]}

    def write_compacted(self, conversation: Conversation, compaction: Any, layout: str, options: Any) -> Written:
        log: StoreLog | None = conversation.native
        if not isinstance(log, StoreLog):
            raise ValueError(f"output.format=hermes-store writes sessions read from a Hermes store; this "
                             f"conversation is {conversation.format}")
        if not compaction.outcome.compacted:
            return Written([], {"history": "archived", "rows_archived": 0, "rows_inserted": 0})
        messages = [unmarked(m) for m in compaction.messages]
        sections = compaction.outcome.summary.text.strip()[:200] if compaction.outcome.summary else None
        system_prompt, rows = None, []
        for message in messages:
            if message.get("role") == "system" and not rows:
                system_prompt = text_of(message.get("content"))
                continue
            row = _row(message, rows[-1] if rows else None)
            if sections and sections in text_of(message.get("content")):
                row["content"] = f"{SUMMARY_PREFIX} {text_of(row['content'])}"
            rows.append(row)
        change = {"hermes_store": 1, "session_id": log.session_id, "replaces": log.replaces, "rows": rows,
                  "system_prompt": system_prompt if system_prompt != log.system_prompt else None}
        # written in place, the session reads back as these rows: an incremental run keys it as the reader
        # will (work_stream: the digest and its first occurrence), so it is skipped until new rows come
        after = store.digest(log.session_id, system_prompt or log.system_prompt, [store.as_stored(r) for r in rows])
        return Written([change], {"history": "archived", "rows_archived": len(log.replaces),
                                  "rows_inserted": len(rows)},
                       done_as=f"{after}:0" if getattr(options, "store", None) == "in_place" else None)
