"""Replay cost model: what the live agent would have been billed for a stored conversation.

Each assistant message is one request. Its prompt is a fixed prefix (system
prompt and tool definitions the transcript does not hold) plus the history so
far. When the prompt reaches compression.threshold x context_length the
engine compacts it the way the batch engine does (the same pure boundary and
budget functions: head + summary + tail) and the history grows again from
there; the summary call is billed at the summary model's prices (input = the
middle + the summarizer's instructions, output = the summary). The summary
size is the summary budget's formula (stages/plan.py) unless the caller fixes it
(`summary_tokens`): that is the size the engine asks for, and the replay
must not depend on which summarizer a run used.

Caching follows strategy system_and_3 (stages/cache_mark.py): breakpoints after the system
prompt and after each of the last three non-system messages. A request reads
the longest still-valid prefix cached at an earlier request's breakpoint and
writes from there to its last breakpoint; tokens after that are uncached.
An entry lives `cache_ttl` after it was last used. A compaction keeps only the
entries inside what it leaves unchanged (the first one changes the system
prompt, so nothing survives it). Prefixes shorter than the model's minimum
are not cached.

Linear in the conversation: prefix sums of the per-message counts the caller
passes in (nothing is tokenized here); the boundary functions only see the
live window, whose size the threshold bounds.

Left out, on purpose: the hygiene layer (it sits above the agent threshold),
pruning inside the middle (the middle is summarized anyway; summary input is
billed unpruned, an upper bound), widening the tail for the summary's role,
Anthropic's 20-block lookback (requests here add far fewer), output caching.
Calibrated on Claude Code logs: hermes_pipeline/cost/calibration.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from itertools import accumulate
from typing import Iterable, Sequence

from hermes_pipeline.config.schema import (
    CompressionConfig,
    HygieneConfig,
    ModelConfig,
    PromptCachingConfig,
    ReplayConfig,
)
from hermes_pipeline.stages.plan import compute_budgets, find_head_end, find_tail_start
from hermes_pipeline.transcript import role

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
WINDOW = 3                       # system_and_3: the last three non-system messages are marked
# Stands for the running summary inside the live window: a role the boundary
# rules ignore, so the summary is never taken for "the latest user message".
_SUMMARY_SLOT = {"role": "summary", "content": ""}


@dataclass(frozen=True)
class Prices:
    """USD per million tokens (conf/model/*.yaml `prices`)."""
    input: float = 0.0
    output: float = 0.0
    cache_write_5m: float = 0.0
    cache_write_1h: float = 0.0
    cache_read: float = 0.0

    @classmethod
    def of(cls, mapping) -> "Prices":
        return cls(**{f.name: float(mapping.get(f.name, 0) or 0) for f in fields(cls)})

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class ReplaySettings:
    """What the replay of one conversation needs; each default is the schema's (config/schema.py)."""
    prices: Prices
    context_length: int                    # model.context_length: the model's own, no default
    summary_prices: Prices | None = None   # None: the run's model prices
    threshold: float = CompressionConfig.threshold
    target_ratio: float = CompressionConfig.target_ratio
    protect_first_n: int = CompressionConfig.protect_first_n
    protect_last_n: int = CompressionConfig.protect_last_n
    summary_context_share: float = CompressionConfig.summary_context_share
    summary_ceiling: int = CompressionConfig.summary_ceiling
    compression: bool = CompressionConfig.enabled
    hygiene_threshold: float = HygieneConfig.threshold
    caching: bool = True                   # prompt caching on (the run decides it from prompt_caching.enabled)
    cache_ttl: str = PromptCachingConfig.cache_ttl
    prefix_tokens: int = ReplayConfig.prefix_tokens        # system prompt + tool definitions not in the transcript
    warm_prefix_tokens: int = ReplayConfig.warm_prefix_tokens   # of which already cached at the start
    turn_gap_s: float = ReplayConfig.turn_gap_s            # seconds between requests when there are no timestamps
    min_cache_tokens: int = ModelConfig.min_cache_tokens   # shorter prefixes are silently not cached
    token_scale: float = ModelConfig.token_scale           # model tokens per counted (cl100k) token
    summary_tokens: int = ReplayConfig.summary_tokens      # 0: the summary budget formula; N: every summary is N
    instruction_tokens: int = 0    # the summarizer's fixed instructions, sent with each middle
    note_tokens: int = 0           # the compaction note the first compaction appends to the system prompt


@dataclass
class Bill:
    """Tokens and dollars of one replay."""
    requests: int = 0
    uncached_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    compactions: int = 0
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    input_usd: float = 0.0
    cache_write_usd: float = 0.0
    cache_read_usd: float = 0.0
    output_usd: float = 0.0
    summary_usd: float = 0.0
    over_context: int = 0          # requests whose prompt is longer than the model's context: they would fail
    work: int = 0                  # messages looked at: grows linearly with the conversation
    per_request: list | None = field(default=None, repr=False)   # (uncached, write, read) per request

    @property
    def prompt_tokens(self) -> int:
        return self.uncached_tokens + self.cache_write_tokens + self.cache_read_tokens

    @property
    def cache_hit_rate(self) -> float | None:
        prompt = self.prompt_tokens
        return round(self.cache_read_tokens / prompt, 4) if prompt else None

    @property
    def input_side_usd(self) -> float:
        return self.input_usd + self.cache_write_usd + self.cache_read_usd

    @property
    def cost_usd(self) -> float:
        return self.input_side_usd + self.output_usd + self.summary_usd


@dataclass
class ReplayResult:
    configured: Bill          # as configured
    no_compression: Bill      # same conversation, compression off
    no_caching: Bill          # same conversation, prompt caching off

    def to_dict(self) -> dict:
        b = self.configured
        return {
            "requests": b.requests, "compactions": b.compactions,
            "uncached_tokens": b.uncached_tokens, "cache_write_tokens": b.cache_write_tokens,
            "cache_read_tokens": b.cache_read_tokens, "output_tokens": b.output_tokens,
            "summary_calls": b.summary_calls, "summary_input_tokens": b.summary_input_tokens,
            "summary_output_tokens": b.summary_output_tokens,
            "input_usd": round(b.input_usd, 6), "cache_write_usd": round(b.cache_write_usd, 6),
            "cache_read_usd": round(b.cache_read_usd, 6), "output_usd": round(b.output_usd, 6),
            "summary_usd": round(b.summary_usd, 6), "cost_usd": round(b.cost_usd, 6),
            "cache_hit_rate": b.cache_hit_rate,
            "cost_usd_no_compression": round(self.no_compression.cost_usd, 6),
            "cost_usd_no_caching": round(self.no_caching.cost_usd, 6),
            # a bill whose requests do not fit the context is one no model would send
            "requests_over_context": b.over_context,
            "requests_over_context_no_compression": self.no_compression.over_context,
        }


def request_times(messages: Sequence[dict], timestamps: Sequence[float | None] | None,
                  gap: float) -> dict[int, float]:
    """Seconds at which each assistant message was requested: its timestamp, else the last one + gap."""
    times, last = {}, None
    for i, message in enumerate(messages):
        if role(message) != "assistant":
            continue
        stamp = timestamps[i] if timestamps is not None else None
        now = float(stamp) if stamp is not None else (last + gap if last is not None else 0.0)
        times[i] = max(now, last) if last is not None else now   # clocks in logs go backwards at times
        last = times[i]
    return times


def replay(messages: Sequence[dict], counts: Iterable[int], timestamps: Sequence[float | None] | None,
           settings: ReplaySettings, *, resets: Iterable[int] = (), cold: Iterable[int] = (),
           per_request: bool = False) -> ReplayResult:
    """Replay one conversation as configured, without compression and without caching.

    `counts` are the per-message token counts (read once). `resets` are message
    indexes where the conversation's own agent restarted the history from a
    summary (e.g. Claude Code's compactions); `cold` are assistant indexes
    whose request found no cache (e.g. a switch to another model).
    """
    scale = settings.token_scale
    model_counts = [round(c * scale) for c in counts] if scale != 1.0 else list(counts)
    if len(model_counts) != len(messages):
        raise ValueError(f"{len(model_counts)} counts for {len(messages)} messages")
    prefix_sums = [0, *accumulate(model_counts)]
    times = request_times(messages, timestamps, settings.turn_gap_s)
    resets, cold = frozenset(resets), frozenset(cold)
    run = lambda s: _Replay(messages, model_counts, prefix_sums, times, s, resets, cold, per_request).run()
    return ReplayResult(run(settings), run(replace(settings, compression=False)),
                        run(replace(settings, caching=False)))


class _Replay:
    """One pass over a conversation. History = head + [summary] + messages[live:i]."""

    def __init__(self, messages, counts, prefix_sums, times, settings: ReplaySettings, resets, cold, keep):
        self.m, self.c, self.P, self.times, self.s = messages, counts, prefix_sums, times, settings
        self.resets, self.cold = resets, cold
        self.budgets = compute_budgets(settings.context_length, settings.threshold, settings.target_ratio,
                                       settings.hygiene_threshold, summary_context_share=settings.summary_context_share,
                                       summary_ceiling=settings.summary_ceiling)
        self.ttl = TTL_SECONDS[settings.cache_ttl]
        self.system_first = bool(messages) and role(messages[0]) == "system"
        self.bill = Bill(per_request=[] if keep else None)
        self.fixed = settings.prefix_tokens        # grows by the compaction note once
        self.base = 0                              # first message of the current history
        self.head_stop = None                      # end of the verbatim head once compacted
        self.summary = None                        # tokens of the running summary
        self.live = 0                              # first message after the summary
        self.noted = False
        self.entries: dict[int, float] = {}        # cached prefix length -> last used (seconds)
        warm = min(settings.warm_prefix_tokens, settings.prefix_tokens)
        if warm and times:
            self.entries[warm] = min(times.values())

    # -- the history ------------------------------------------------------------

    def system_end(self) -> int:
        """Where the system prompt ends: the first breakpoint."""
        own = self.c[0] if self.system_first and self.base == 0 else 0
        return self.fixed + own

    def stable(self) -> int:
        """Prompt tokens a compaction leaves unchanged: system prompt and, once compacted, the head."""
        head = self.P[self.head_stop] - self.P[self.base] if self.summary is not None else 0
        return max(self.system_end(), self.fixed + head)

    def history_tokens(self, i: int) -> int:
        if self.summary is None:
            return self.P[i] - self.P[self.base]
        return self.P[self.head_stop] - self.P[self.base] + self.summary + self.P[i] - self.P[self.live]

    def last_message_sizes(self, i: int) -> list[int]:
        """Token sizes of the last WINDOW non-system messages of the history, newest first."""
        sizes, j = [], i - 1
        live_from = self.live if self.summary is not None else self.base
        while j >= live_from and len(sizes) < WINDOW:
            if role(self.m[j]) != "system":
                sizes.append(self.c[j])
            j -= 1
        if self.summary is not None and len(sizes) < WINDOW:
            sizes.append(self.summary)
            j = self.head_stop - 1
            while j >= self.base and len(sizes) < WINDOW:
                if role(self.m[j]) != "system":
                    sizes.append(self.c[j])
                j -= 1
        return sizes

    # -- one pass -----------------------------------------------------------------

    def run(self) -> Bill:
        threshold = self.budgets.threshold_tokens
        for i, message in enumerate(self.m):
            self.bill.work += 1
            if i in self.resets:
                self.base, self.live, self.head_stop, self.summary = i, i, None, None
                self._keep_entries(self.system_end())
            if role(message) != "assistant":
                continue
            if self.s.compression and self.fixed + self.history_tokens(i) >= threshold:
                self._compact(i)
            self._request(i)
        return self.bill

    def _compact(self, i: int) -> None:
        s = self.s
        if self.summary is None:
            window, window_counts = self.m[self.base:i], self.c[self.base:i]
            head = find_head_end(window, s.protect_first_n)
        else:
            head = self.head_stop - self.base
            window = [*self.m[self.base:self.head_stop], _SUMMARY_SLOT, *self.m[self.live:i]]
            window_counts = [*self.c[self.base:self.head_stop], self.summary, *self.c[self.live:i]]
        self.bill.work += len(window)
        tail = find_tail_start(window, window_counts, self.budgets.tail_token_budget, s.protect_last_n, head)
        if self.summary is None:
            start, tail_start = self.base + head, self.base + tail
            if tail_start <= start:
                return                              # head and tail cover everything: a no-op
            middle = self.P[tail_start] - self.P[start]
            self.head_stop = start
        else:
            tail_start = self.live + tail - head - 1
            if tail_start <= self.live:
                return                              # nothing new to summarize
            middle = self.summary + self.P[tail_start] - self.P[self.live]
        self.live = tail_start
        self.summary = s.summary_tokens or self.budgets.summary_tokens(middle)
        prices = s.summary_prices or s.prices
        self.bill.compactions += 1
        self.bill.summary_calls += 1
        self.bill.summary_input_tokens += middle + s.instruction_tokens
        self.bill.summary_output_tokens += self.summary
        self.bill.summary_usd += ((middle + s.instruction_tokens) * prices.input + self.summary * prices.output) / 1e6
        if not self.noted:                          # the note changes the system prompt: nothing survives
            self.noted = True
            self.fixed += s.note_tokens
            self.entries.clear()
        self._keep_entries(self.stable())

    def _keep_entries(self, limit: int) -> None:
        self.entries = {p: t for p, t in self.entries.items() if p <= limit}

    def _request(self, i: int) -> None:
        s, bill = self.s, self.bill
        prompt = self.fixed + self.history_tokens(i)
        read = write = 0
        if s.caching:
            now = self.times[i]
            if i in self.cold:
                self.entries.clear()
            self.entries = {p: t for p, t in self.entries.items() if now - t <= self.ttl}
            marks, end = [], prompt
            for size in self.last_message_sizes(i):
                marks.append(end)
                end -= size
            marks.append(self.system_end())
            marks = [p for p in marks if p >= max(s.min_cache_tokens, 1)]
            if marks:
                last = max(marks)
                read = max((p for p in self.entries if p <= last), default=0)
                write = last - read
                kept = self.stable()
                self.entries = {p: t for p, t in self.entries.items() if p <= kept}
                for p in (*marks, read):
                    if p:
                        self.entries[p] = now
        uncached = prompt - read - write
        output = self.c[i]
        bill.requests += 1
        if prompt > s.context_length:
            bill.over_context += 1
        bill.uncached_tokens += uncached
        bill.cache_write_tokens += write
        bill.cache_read_tokens += read
        bill.output_tokens += output
        p = s.prices
        write_price = p.cache_write_1h if s.cache_ttl == "1h" else p.cache_write_5m
        bill.input_usd += uncached * p.input / 1e6
        bill.cache_write_usd += write * write_price / 1e6
        bill.cache_read_usd += read * p.cache_read / 1e6
        bill.output_usd += output * p.output / 1e6
        if bill.per_request is not None:
            bill.per_request.append((i, uncached, write, read))
