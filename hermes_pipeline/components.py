"""The composition root: a composed, validated config -> the run's components.

This is the one place that reads the config; everything below it receives
plain values (budgets, settings, options of its own).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from hermes_pipeline.config import ConfigError, validate
from hermes_pipeline.dry_run import dry_run_summarizer
from hermes_pipeline.engine.base import ContextEngine, EngineServices, StageTools
from hermes_pipeline.engine.plan import Budgets, Settings, compute_budgets
from hermes_pipeline.engine.plugins import Resolved, resolve_engine
from hermes_pipeline.inputs import input_roots, input_specs
from hermes_pipeline.output_tree import OutputTree
from hermes_pipeline.stages.cache_mark import CachingPolicy, caching_policy
from hermes_pipeline.state import config_fingerprint
from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError
from hermes_pipeline.tokens import TokenCounter


@dataclass
class Components:
    engine: ContextEngine
    summarizer: Summarizer
    caching: CachingPolicy
    runner: object
    resolved: Resolved


def budgets_from_config(cfg: DictConfig) -> Budgets:
    c = cfg.compression
    target = int(c.target_tokens) if c.mode == "fit" and c.target_tokens else None
    return compute_budgets(context_length=int(cfg.model.context_length), threshold=float(c.threshold),
                           target_ratio=float(c.target_ratio), hygiene_threshold=float(cfg.hygiene.threshold),
                           token_scale=float(cfg.model.token_scale), target_tokens=target)


def settings_from_config(cfg: DictConfig) -> Settings:
    c = cfg.compression
    return Settings(protect_first_n=int(c.protect_first_n), protect_last_n=int(c.protect_last_n),
                    prune_min_chars=int(c.prune_min_chars), keep_images=int(c.keep_images),
                    max_tool_arg_chars=int(c.max_tool_arg_chars), mode=str(c.mode),
                    target_protect_last_n=int(c.target_protect_last_n))


def _instantiate(node: DictConfig, key: str, **kwargs):
    """instantiate(), with a bad option reported as a config error naming the group."""
    try:
        return instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as error:
        raise ConfigError(f"{key}: {error}") from None


def _stage(node: DictConfig, tools: StageTools):
    """A stage, given its tools as it is built (through a partial: Hydra would turn them into config)."""
    make = _instantiate(node, "pipeline.stages", _partial_=True)
    try:
        return make(tools=tools)
    except TypeError as error:    # an option the stage doesn't take
        raise ConfigError(f"pipeline.stages: {node.get('_target_')}: {error}") from None


def build_summarizer(cfg: DictConfig) -> Summarizer:
    summarizer = _instantiate(cfg.summarizer, "summarizer",
                              model_cfg=OmegaConf.to_container(cfg.model, resolve=True),
                              aux_cfg=OmegaConf.to_container(cfg.auxiliary.compression, resolve=True))
    if dry_run_enabled(cfg):     # the embedded summarizer writes; the configured one is only priced
        return dry_run_summarizer(cfg, summarizer)
    summarizer.check()   # a missing key or a wrong-provider model fails here, before any file is read
    return summarizer


def dry_run_enabled(cfg: DictConfig) -> bool:
    return bool(OmegaConf.select(cfg, "dry_run", default=False))


def plugin_search_dirs(cfg: DictConfig) -> list[Path]:
    return [Path.cwd(), *(Path(d).expanduser() for d in cfg.plugins.dirs)]


def build_engine(cfg: DictConfig, summarizer: Summarizer, policy: CachingPolicy,
                 store_dir: Path) -> tuple[ContextEngine, Resolved]:
    tools = StageTools(summarizer, TokenCounter(cfg.model.tokenizer), policy if policy.enabled else None)
    stages = tuple(_stage(stage, tools) for stage in cfg.pipeline.stages)
    services = EngineServices(
        budgets=budgets_from_config(cfg), settings=settings_from_config(cfg), tools=tools,
        stages=stages, enabled=bool(cfg.compression.enabled), hygiene_min_messages=int(cfg.hygiene.min_messages),
        store_dir=store_dir, model_name=str(cfg.model.name))
    resolved = resolve_engine(str(cfg.context.engine), plugin_search_dirs(cfg))
    options = OmegaConf.to_container(cfg.context.options, resolve=True) if resolved.fallback is None else {}
    if dry_run_enabled(cfg) and options.get("store"):
        options["store"] = None      # a dry run writes nothing outside its run folder (the lcm store included)
    try:
        engine = resolved.factory(services, **options)
    except TypeError as error:   # an option the engine doesn't take
        raise ConfigError(f"context.options for engine {resolved.name!r}: {error}") from None
    except (ConfigError, SummarizerFatalError):
        raise
    except Exception as error:   # a plugin that can't start is a config error, not a traceback
        raise ConfigError(f"context engine {resolved.name!r} ({resolved.origin}) could not be built: "
                          f"{type(error).__name__}: {error}") from None
    return engine, resolved


def engine_in_worker(container: dict, store_dir: str) -> ContextEngine:
    """An engine built from a resolved config: how a worker process gets its own."""
    cfg = OmegaConf.create(container)
    summarizer = build_summarizer(cfg)
    return build_engine(cfg, summarizer, caching_from_config(cfg), Path(store_dir))[0]


def caching_from_config(cfg: DictConfig) -> CachingPolicy:
    policy = caching_policy(cfg.model.name, cfg.model.provider, cfg.prompt_caching.enabled,
                            cfg.prompt_caching.cache_ttl)
    if cfg.compression.mode == "fit":     # training data: kept messages are written as they were read
        return CachingPolicy(False, policy.ttl, policy.native_anthropic, "compression.mode=fit adds no markers")
    return policy


def output_dir(cfg: DictConfig) -> Path | None:
    """The persistent output tree, if any; incremental runs need one."""
    folder = Path(str(cfg.output.dir)).expanduser() if cfg.output.dir else None
    if cfg.incremental.enabled and folder is None:
        raise ConfigError("incremental=true needs output.dir=PATH: the tree whose state it keeps")
    return folder


def output_tree(cfg: DictConfig, run_dir: Path) -> OutputTree:
    """Where this run writes (a persistent tree is locked first: raises OutputLocked)."""
    if dry_run_enabled(cfg):
        return OutputTree.nowhere()
    folder = output_dir(cfg)
    if folder is None:
        return OutputTree.in_run_folder(run_dir)
    return OutputTree.persistent_tree(folder, run_dir, bool(cfg.incremental.enabled), config_fingerprint(cfg),
                                      input_roots(input_specs(cfg)), bool(cfg.incremental.input_moved))


def build(cfg: DictConfig, store_dir: Path = Path(".")) -> Components:
    validate(cfg)
    policy = caching_from_config(cfg)
    summarizer = build_summarizer(cfg)
    engine, resolved = build_engine(cfg, summarizer, policy, store_dir)
    runner = _instantiate(cfg.runner, "runner")
    # workers get the config resolved here: ${hydra:...} does not resolve inside them
    make_engine = partial(engine_in_worker, OmegaConf.to_container(cfg, resolve=True), str(store_dir))
    runner.start(engine, make_engine, auto_concurrency=int(getattr(summarizer, "max_in_flight", 1) or 1))
    return Components(engine, summarizer, policy, runner, resolved)
