"""The replay inside a run: settings from the composed config, a manifest field, run totals.

The replay bills what the live Hermes agent would have paid for each stored
conversation under this run's settings (hermes_pipeline/replay.py). Its
summaries are LLM calls whatever summarizer this run used, priced at the
summary model's prices: `auxiliary.compression.model` when it names a config
in conf/model/, else the run's model.
"""
from __future__ import annotations

import functools
from typing import Sequence

from omegaconf import OmegaConf

from hermes_pipeline.config.files import config_dir
from hermes_pipeline.replay import Prices, ReplaySettings, replay
from hermes_pipeline.stages.cache_mark import caching_policy
from hermes_pipeline.tokens import TokenCounter
from hermes_pipeline.transcript import COMPACTION_NOTE

BATCH_PRICE = 0.5     # a batch API bills every token at half the price (Anthropic: cache reads and writes too)

TOKEN_KEYS = ("requests", "compactions", "uncached_tokens", "cache_write_tokens", "cache_read_tokens",
              "output_tokens", "summary_calls", "summary_input_tokens", "summary_output_tokens",
              "requests_over_context", "requests_over_context_no_compression")
USD_KEYS = ("input_usd", "cache_write_usd", "cache_read_usd", "output_usd", "summary_usd", "cost_usd",
            "cost_usd_no_compression", "cost_usd_no_caching")


@functools.lru_cache(maxsize=4)
def _fixed_texts(tokenizer: str) -> tuple[int, int]:
    """(summarizer instructions, compaction note) in tokens: both are sent as they are."""
    from hermes_pipeline.summarizers.prompt import INSTRUCTIONS
    counter = TokenCounter(tokenizer)
    return counter.count_text(INSTRUCTIONS), counter.count_text(COMPACTION_NOTE)


def summary_model_config(cfg, model_name: str | None = None):
    """The summary model's config (`model_name`, else auxiliary.compression.model): its conf/model/
    file, or the run's model when there is none."""
    name = model_name or OmegaConf.select(cfg, "auxiliary.compression.model")
    path = config_dir() / "model" / f"{name}.yaml" if name else None
    if path is not None and path.is_file():
        return OmegaConf.merge({"prices": {}}, OmegaConf.load(path))
    return cfg.model


def summary_prices(cfg, model_name: str | None = None) -> Prices:
    """Prices of the summary model (see summary_model_config)."""
    return Prices.of(summary_model_config(cfg, model_name).get("prices") or {})


def summarizes(cfg) -> bool:
    """Whether the run's stage chain writes a summary: the replay bills head + summary + tail."""
    stages = OmegaConf.select(cfg, "pipeline.stages", default=None) or []
    return any(str(stage.get("_target_", "")).endswith(".SummarizeStage") for stage in stages)


def settings_from_config(cfg) -> ReplaySettings | None:
    """The replay settings of a run, or None when `replay.enabled` is false or the chain writes no
    summary (pipeline=mask_only: its bill is not one the replay knows how to make)."""
    if not OmegaConf.select(cfg, "replay.enabled", default=False) or not summarizes(cfg):
        return None
    model, c, r = cfg.model, cfg.compression, cfg.replay
    scale = float(model.get("token_scale", 1.0))
    policy = caching_policy(model.name, model.provider, cfg.prompt_caching.enabled, cfg.prompt_caching.cache_ttl)
    instructions, note = _fixed_texts(str(model.tokenizer))
    sp = summary_prices(cfg)
    if OmegaConf.select(cfg, "summarizer.batch.enabled", default=False):    # summaries at the batch price
        sp = Prices.of({name: price * BATCH_PRICE for name, price in sp.to_dict().items()})
    return ReplaySettings(
        prices=Prices.of(model.prices), summary_prices=sp,
        context_length=int(model.context_length), threshold=float(c.threshold), target_ratio=float(c.target_ratio),
        protect_first_n=int(c.protect_first_n), protect_last_n=int(c.protect_last_n),
        compression=bool(c.enabled), caching=policy.enabled, cache_ttl=str(policy.ttl),
        prefix_tokens=int(r.prefix_tokens), warm_prefix_tokens=int(r.warm_prefix_tokens),
        turn_gap_s=float(r.turn_gap_s), min_cache_tokens=int(model.get("min_cache_tokens", 1024)),
        token_scale=scale, summary_tokens=int(r.summary_tokens),
        instruction_tokens=instructions, note_tokens=note,
    )


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
