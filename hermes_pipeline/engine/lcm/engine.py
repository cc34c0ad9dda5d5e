"""LCM, lossless context management: compact like the compressor, lose nothing.

The engine runs the built-in ContextCompressor (same budgets, stages and
summary), and keeps every original in a content-addressed store (store.py):

- each conversation's input record, compacted or not (`input_record` below);
- each removed middle (messages[start:end]) as a span, whose pointer the
  summary carries as a line `Stored originals: lcm:<id> (messages i-j)`,
  i and j the first and last removed index of the conversation as it was
  compacted. The line is reserved out of the summary budget.

Re-compacting a compacted conversation removes its earlier summary with the
rest of the middle; that summary's pointer lines are carried into the new
one, so every pointer handed out stays in the summary and stays expandable
(ids are content hashes and the store never deletes).
"""
from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from hermes_pipeline.engine.base import Compaction, ContextEngine, EngineServices
from hermes_pipeline.engine.compressor import ContextCompressor
from hermes_pipeline.engine.lcm.browse import Browser
from hermes_pipeline.engine.lcm.store import LCMStore, message_text
from hermes_pipeline.formats.roundtrip import public
from hermes_pipeline.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.fallback import with_fallback
from hermes_pipeline.transcript import Conversation, is_summary_message
from hermes_pipeline.transcript import message_text as visible_text

POINTER_LINE = re.compile(r"^Stored originals: lcm:[0-9a-f]{64} \(messages \d+-\d+\)$", re.M)
POINTER_HELP = "(lcm_expand a pointer for the exact messages, lcm_grep to search them)"
MIN_SHARE_LEFT = 4     # the summary proper keeps at least 1/4 of its budget, however many pointers


def input_record(conversation: Conversation) -> tuple[Any, str]:
    """What `expand` gives back for a conversation, and which kind of input it was.

    - "lines": a one-conversation-per-file input (Claude Code, pi, and the
      message-per-line layouts): the JSON array of the values of the input
      lines it was read from, in file order (lines quarantined as unreadable
      are not part of it; quarantine.jsonl has their bytes);
    - "line": a one-conversation-per-line input: the value of its line;
    - "canonical": a conversation not read from a file (a caller's own):
      {"id", "messages"} as given.
    """
    if conversation.raw_records is not None:
        return conversation.raw_records, "lines"
    if conversation.record is not None:
        return conversation.record, "line"
    return {"id": conversation.id, "messages": conversation.messages}, "canonical"


def pointer_line(span_id: str, start: int, end: int) -> str:
    return f"Stored originals: lcm:{span_id} (messages {start}-{end - 1})"


def without_pointer_lines(text: str) -> str:
    kept = [line for line in text.split("\n") if not POINTER_LINE.match(line) and line != POINTER_HELP]
    return "\n".join(kept).strip()


def carried_pointer_lines(messages: list[dict]) -> list[str]:
    """Pointer lines of earlier summaries among the removed messages, oldest first, each once."""
    lines: list[str] = []
    for message in messages:
        if is_summary_message(message):
            lines += [line for line in POINTER_LINE.findall(visible_text(message)) if line not in lines]
    return lines


class _Keeper(Summarizer):
    """The run's summarizer, for one conversation: stores the middle first, then
    summarizes it in what is left of the budget and appends the pointer lines.

    Fallbacks happen here (summarizers/fallback.py, as in the summarize stage), so a
    fallback summary carries the pointers too.
    """

    def __init__(self, inner: Summarizer, engine: "LCMEngine", conversation: Conversation, record_id: str):
        self.inner, self.engine = inner, engine
        self.conversation, self.record_id = conversation, record_id
        self.name = inner.name
        self.pointers: list[str] = []
        self.span: str | None = None

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        if request.span is None:    # a stage that doesn't say what it replaces: no pointer to give
            return self.inner.summarize(request)
        start, end = request.span
        self.span = self.engine.store_span(self.conversation, self.record_id, start, end)
        lines = carried_pointer_lines(self.conversation.messages[start:end]) + [pointer_line(self.span, start, end)]
        self.pointers = [f"lcm:{line.split('lcm:')[1][:64]}" for line in lines]
        section = "\n".join([POINTER_HELP, *lines])
        reserved = self.engine.counter.count_text(section) + 2
        budget = max(request.budget_tokens - reserved, request.budget_tokens // MIN_SHARE_LEFT)
        previous = without_pointer_lines(request.previous_summary) if request.previous_summary else None
        inner_request = replace(request, budget_tokens=budget, previous_summary=previous or None)
        result = with_fallback(self.inner).summarize(inner_request)
        return replace(result, text=f"{without_pointer_lines(result.text)}\n\n{section}")


class LCMEngine(ContextEngine):
    name = "lcm"

    def __init__(self, services: EngineServices, store: str | None = None):
        self.services = services
        self.store_path = Path(store).expanduser() if store else Path(services.store_dir) / "lcm.sqlite"
        self.store = LCMStore(self.store_path)
        self.counter = services.tools.counter
        self.compressor = ContextCompressor(services)      # decides and tracks usage; also checks the chain

    def should_compress(self, prompt_tokens: int) -> bool:
        return self.compressor.should_compress(prompt_tokens)

    def update_from_response(self, usage: dict) -> None:
        self.compressor.update_from_response(usage)

    def compress(self, conversation: Conversation) -> Compaction:
        record, kind = input_record(conversation)
        record_id = self.store.put("record", record, conversation=(
            conversation.id, conversation.source, conversation.format))
        # a compressor of this call's own, so threads never share the per-conversation keeper
        keeper = _Keeper(self.services.tools.summarizer, self, conversation, record_id)
        tools = replace(self.services.tools, summarizer=keeper)
        services = replace(self.services, tools=tools, stages=tuple(s.with_tools(tools) for s in self.services.stages))
        compaction = ContextCompressor(services).compress(conversation)
        outcome = compaction.outcome
        outcome.engine = self.name
        outcome.extra = {**outcome.extra, "lcm_store": str(self.store_path), "lcm_record": f"lcm:{record_id}",
                         "lcm_record_kind": kind, "lcm_span": f"lcm:{keeper.span}" if keeper.span else None,
                         "lcm_pointers": keeper.pointers if compaction.outcome.compacted else []}
        if outcome.compacted:       # what `hermes-pipeline-lcm show` prints, its summaries' pointers under them
            compacted = {"kind": "compacted", "conversation": conversation.id, "source": conversation.source,
                         "record": f"lcm:{record_id}", "pointers": keeper.pointers,
                         "messages": [public(m) for m in compaction.messages]}
            self.store.put("compacted", compacted, conversation=(conversation.id, conversation.source, None))
        return compaction

    def store_span(self, conversation: Conversation, record_id: str, start: int, end: int) -> str:
        messages = conversation.messages[start:end]
        lines = conversation.message_lines[start:end] if conversation.message_lines else None
        span = {"kind": "span", "conversation": conversation.id, "record": f"lcm:{record_id}",
                "source": conversation.source, "start": start, "end": end, "lines": lines, "messages": messages}
        texts = [(start + k, message_text(m)) for k, m in enumerate(messages)]
        return self.store.put("span", span, texts)

    # -- what an agent could call --------------------------------------------------

    def tools(self) -> list[dict]:
        return copy.deepcopy(list(TOOLS))     # a caller may edit its copy

    def call_tool(self, name: str, arguments: dict) -> Any:
        """Run one of tools() as an agent would: lcm_grep -> hits, lcm_expand -> the stored JSON."""
        if name == "lcm_grep":
            hits = self.store.grep(arguments["pattern"], fixed=bool(arguments.get("fixed", False)),
                                   ignore_case=bool(arguments.get("ignore_case", False)),
                                   limit=int(arguments.get("limit", 20)))
            return [{"pointer": f.pointer, "index": f.position, "snippet": f.snippet, "conversation": f.conversation,
                     "source": f.where, "role": f.role} for f in Browser(self.store).found(hits)]
        if name == "lcm_expand":
            return self.store.get(arguments["pointer"])
        raise KeyError(f"the lcm engine has no tool {name!r}")

    def close(self) -> None:
        self.store.close()


TOOLS: tuple[dict, ...] = (
    {"type": "function", "function": {
        "name": "lcm_grep",
        "description": "Search the original messages that compaction removed from this conversation (and any "
                       "other stored in the same lcm store). Returns pointers with the message index, its role, "
                       "conversation and input file:line, and a snippet.",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1,
                            "description": "a regular expression (Python syntax), or a plain string with fixed"},
                "fixed": {"type": "boolean", "default": False, "description": "match pattern literally"},
                "ignore_case": {"type": "boolean", "default": False},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 20,
                          "description": "at most this many hits"},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    }},
    {"type": "function", "function": {
        "name": "lcm_expand",
        "description": "The exact stored original behind a pointer from a compaction summary or from lcm_grep: "
                       "a span of removed messages, or a whole input conversation record.",
        "parameters": {
            "type": "object",
            "properties": {
                "pointer": {"type": "string", "pattern": "^(lcm:)?[0-9a-f]{8,64}$",
                            "description": "lcm:<sha256 hex> (a unique prefix of 8+ hex digits is enough)"},
            },
            "required": ["pointer"],
            "additionalProperties": False,
        },
    }},
)
