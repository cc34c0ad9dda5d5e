"""Turn a composed, validated config into the run's components."""
from __future__ import annotations

from dataclasses import dataclass

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from hermes_pipeline.budget import budgets_from_config
from hermes_pipeline.config import validate
from hermes_pipeline.engine import ContextEngine, resolve_engine_factory
from hermes_pipeline.stages.base import EngineContext, Settings
from hermes_pipeline.stages.cache_mark import CachingPolicy, caching_policy
from hermes_pipeline.summarizers.base import Summarizer
from hermes_pipeline.tokens import TokenCounter


@dataclass
class Components:
    engine: ContextEngine
    summarizer: Summarizer
    caching: CachingPolicy


def settings_from_config(cfg: DictConfig) -> Settings:
    c = cfg.compression
    return Settings(protect_first_n=int(c.protect_first_n), protect_last_n=int(c.protect_last_n),
                    prune_min_chars=int(c.prune_min_chars), keep_images=int(c.keep_images),
                    max_tool_arg_chars=int(c.max_tool_arg_chars))


def build_summarizer(cfg: DictConfig) -> Summarizer:
    summarizer = instantiate(
        cfg.summarizer, _convert_="all",
        model_cfg=OmegaConf.to_container(cfg.model, resolve=True),
        aux_cfg=OmegaConf.to_container(cfg.auxiliary.compression, resolve=True),
    )
    summarizer.check()   # a missing key fails here, before any file is read
    return summarizer


def engine_from_container(container: dict) -> ContextEngine:
    """An engine from a resolved config: how a worker process builds its own."""
    return build(OmegaConf.create(container)).engine


def build(cfg: DictConfig) -> Components:
    validate(cfg)
    policy = caching_policy(cfg.model.name, cfg.model.provider, cfg.prompt_caching.enabled,
                            cfg.prompt_caching.cache_ttl)
    summarizer = build_summarizer(cfg)
    context = EngineContext(summarizer=summarizer, counter=TokenCounter(cfg.model.tokenizer),
                            caching=policy if policy.enabled else None)
    factory = resolve_engine_factory(cfg.context.engine)
    engine = factory(
        stages=[instantiate(stage) for stage in cfg.pipeline.stages],
        budgets=budgets_from_config(cfg), settings=settings_from_config(cfg), context=context,
        enabled=bool(cfg.compression.enabled), hygiene_min_messages=int(cfg.hygiene.min_messages),
    )
    return Components(engine, summarizer, policy)
