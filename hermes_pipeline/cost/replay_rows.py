"""The replay inside a run: each manifest row's `replay` field and summary.json's totals of them.

The replay bills what the live Hermes agent would have paid for each stored
conversation under this run's settings (the cost model: hermes_pipeline/cost/replay.py;
its settings are read from the config by components.replay_settings_from_config). Its
summaries are LLM calls whatever summarizer this run used, priced at the
summary model's prices: `auxiliary.compression.model` when it names a config
in conf/model/, else the run's model.
"""
from __future__ import annotations

import functools
from typing import Sequence

from hermes_pipeline.cost.replay import ReplaySettings, replay
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import COMPACTION_NOTE

BATCH_PRICE = 0.5     # a batch API bills every token at half the price (Anthropic: cache reads and writes too)

TOKEN_KEYS = ("requests", "compactions", "uncached_tokens", "cache_write_tokens", "cache_read_tokens",
              "output_tokens", "summary_calls", "summary_input_tokens", "summary_output_tokens",
              "requests_over_context", "requests_over_context_no_compression")
USD_KEYS = ("input_usd", "cache_write_usd", "cache_read_usd", "output_usd", "summary_usd", "cost_usd",
            "cost_usd_no_compression", "cost_usd_no_caching")


@functools.lru_cache(maxsize=4)
def fixed_texts(tokenizer: str) -> tuple[int, int]:
    """(summarizer instructions, compaction note) in tokens: both are sent as they are."""
    from hermes_pipeline.summarizers.llm.prompt import INSTRUCTIONS
    counter = TokenCounter(tokenizer)
    return counter.count_text(INSTRUCTIONS), counter.count_text(COMPACTION_NOTE)


def replay_for_conversation(messages: Sequence[dict], counts: Sequence[int] | None, settings: ReplaySettings,
                            timestamps: Sequence[float | None] | None = None) -> dict:
    """The manifest's `replay` field for one conversation; pass the counts the engine already made."""
    if counts is None:            # an engine that does not hand its counts back
        counts = TokenCounter().count_messages(messages)
    return replay(messages, counts, timestamps, settings).to_dict()


class ReplayTotals:
    """Replay figures added up over a run's manifest rows (summary.json `replay`)."""

    def __init__(self):
        self.conversations = 0
        self.tokens = dict.fromkeys(TOKEN_KEYS, 0)
        self.usd = dict.fromkeys(USD_KEYS, 0.0)

    def add(self, row_replay: dict | None) -> None:
        if not row_replay:
            return
        self.conversations += 1
        for key in TOKEN_KEYS:
            self.tokens[key] += int(row_replay.get(key) or 0)
        for key in USD_KEYS:
            self.usd[key] += float(row_replay.get(key) or 0.0)

    def to_dict(self) -> dict | None:
        if not self.conversations:
            return None
        t = self.tokens
        prompt = t["uncached_tokens"] + t["cache_write_tokens"] + t["cache_read_tokens"]
        return {"conversations": self.conversations, **t, **{k: round(v, 6) for k, v in self.usd.items()},
                "cache_hit_rate": round(t["cache_read_tokens"] / prompt, 4) if prompt else None}
