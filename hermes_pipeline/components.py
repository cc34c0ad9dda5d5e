"""The composition root: a composed, validated config -> the run (`build`).

This is the one place that reads the config; everything below it receives
plain values (budgets, settings, options of its own), and the command line
runs what `build` returns.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from hermes_pipeline.config import ConfigError, validate
from hermes_pipeline.config.files import model_config
from hermes_pipeline.config.schema import AnthropicSummarizerConfig, CompressionConfig, ModelConfig
from hermes_pipeline.cost.dry_run import Pricing, dry_run_summarizer
from hermes_pipeline.cost.replay import Prices, ReplaySettings
from hermes_pipeline.cost.replay_rows import BATCH_PRICE, fixed_texts
from hermes_pipeline.engine.base import ContextEngine, EngineServices
from hermes_pipeline.engine.plugins import Resolved, resolve_engine
from hermes_pipeline.exam.contexts import BASELINES
from hermes_pipeline.exam.plan import ExamPlan
from hermes_pipeline.formats.base import WriteOptions
from hermes_pipeline.formats.hermes_store import HermesStoreFormat, is_store
from hermes_pipeline.formats.hermes_store.layout import store_layout
from hermes_pipeline.inputs.find import Inputs, find_inputs, input_roots, input_specs
from hermes_pipeline.run.executor import RunOptions
from hermes_pipeline.run.incremental import config_fingerprint
from hermes_pipeline.run.output_tree import OutputTree
from hermes_pipeline.run.runners.base import Runner
from hermes_pipeline.run.store_sink import IN_PLACE
from hermes_pipeline.stages.base import StageTools
from hermes_pipeline.stages.cache_mark import CachingPolicy, caching_policy
from hermes_pipeline.stages.plan import Budgets, compute_budgets
from hermes_pipeline.summarizers.base import Summarizer, SummarizerFatalError
from hermes_pipeline.tokens import TokenCounter


@dataclass(frozen=True)
class OutputPlan:
    """Where a run writes, read from the config; the tree is opened (and a persistent one locked) by open()."""
    run_dir: Path | None
    dir: Path | None                 # output.dir: a persistent tree, else the run folder's transcripts/
    dry_run: bool
    incremental: bool
    fingerprint: str
    input_roots: str
    input_moved: bool

    def open(self) -> OutputTree:
        """Raises OutputLocked when another run holds a persistent tree."""
        if self.dry_run:
            return OutputTree.nowhere()
        if self.dir is None:
            return OutputTree.in_run_folder(self.run_dir)
        return OutputTree.persistent_tree(self.dir, self.run_dir, self.incremental, self.fingerprint,
                                          self.input_roots, self.input_moved)


@dataclass(frozen=True)
class Run:
    """Everything one run needs, built from the config once: its parts, inputs, output and settings."""
    engine: ContextEngine
    summarizer: Summarizer
    caching: CachingPolicy           # the markers the engine adds (none in fit mode)
    runner: Runner
    resolved: Resolved
    input_specs: tuple[str, ...]
    inputs: Inputs
    output: OutputPlan
    options: RunOptions
    quiet: bool
    prices: dict                     # the run model's, USD per million tokens
    summarizer_prices: dict          # the summary calls' own model's
    cache_ttl: str                   # of the summarizer's cache marker: what its cache writes cost
    max_fallback_share: float | None   # more fallbacks than this share: exit 4 (an LLM summarizer's)
    exam: ExamPlan | None = None     # exam.enabled: the judged exam after the run (run/exam_pass.py)

    @property
    def dry_run(self) -> bool:
        return self.output.dry_run

    def close(self) -> None:
        for part in (self.runner, self.engine, self.summarizer):
            part.close()


def budgets_from_config(cfg: DictConfig) -> Budgets:
    c = cfg.compression
    target = int(c.target_tokens) if c.mode == "fit" and c.target_tokens else None
    return compute_budgets(context_length=int(cfg.model.context_length), threshold=float(c.threshold),
                           target_ratio=float(c.target_ratio), hygiene_threshold=float(cfg.hygiene.threshold),
                           token_scale=float(cfg.model.token_scale), target_tokens=target,
                           summary_context_share=float(c.summary_context_share),
                           summary_ceiling=int(c.summary_ceiling))


def plan_settings_from_config(cfg: DictConfig) -> CompressionConfig:
    """The boundary planner's and the stages' settings: compression.* as the schema's dataclass (a worker's
    config is a plain one: the schema is merged in again)."""
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(CompressionConfig), cfg.compression))


def summary_model(cfg: DictConfig, model_name: str | None = None) -> DictConfig:
    """The summary model's config (`model_name`, else auxiliary.compression.model): its conf/model/
    file, or the run's model when there is none."""
    found = model_config(model_name or cfg.auxiliary.compression.model)
    return OmegaConf.merge(OmegaConf.structured(ModelConfig), found) if found is not None else cfg.model


def summarizes(cfg: DictConfig) -> bool:
    """Whether the run's stage chain writes a summary: the replay bills head + summary + tail."""
    return any(str(stage.get("_target_", "")).endswith(".SummarizeStage") for stage in cfg.pipeline.stages)


def replay_settings_from_config(cfg: DictConfig, caching: CachingPolicy | None = None) -> ReplaySettings | None:
    """The replay's settings, or None when `replay.enabled` is false or the chain writes no summary
    (pipeline=mask_only: its bill is not one the replay knows how to make). `caching`: the rule's own
    policy (fit mode's writing no markers does not change what the live agent would pay)."""
    if not cfg.replay.enabled or not summarizes(cfg):
        return None
    model, c, r = cfg.model, cfg.compression, cfg.replay
    caching = caching or rule_policy(cfg)
    instructions, note = fixed_texts(str(model.tokenizer))
    sp = Prices.of(summary_model(cfg).prices)
    if _batch_enabled(cfg):    # summaries at the batch price
        sp = Prices.of({name: price * BATCH_PRICE for name, price in sp.to_dict().items()})
    return ReplaySettings(
        prices=Prices.of(model.prices), summary_prices=sp,
        context_length=int(model.context_length), threshold=float(c.threshold), target_ratio=float(c.target_ratio),
        protect_first_n=int(c.protect_first_n), protect_last_n=int(c.protect_last_n),
        summary_context_share=float(c.summary_context_share), summary_ceiling=int(c.summary_ceiling),
        compression=bool(c.enabled), hygiene_threshold=float(cfg.hygiene.threshold),
        caching=caching.enabled, cache_ttl=str(caching.ttl),
        prefix_tokens=int(r.prefix_tokens), warm_prefix_tokens=int(r.warm_prefix_tokens),
        turn_gap_s=float(r.turn_gap_s), min_cache_tokens=int(model.min_cache_tokens),
        token_scale=float(model.token_scale), summary_tokens=int(r.summary_tokens),
        instruction_tokens=instructions, note_tokens=note,
    )


def _batch_enabled(cfg: DictConfig) -> bool:
    """summarizer.batch.enabled; the embedded summarizer (and a plugin's) has no batch node."""
    return bool(OmegaConf.select(cfg, "summarizer.batch.enabled", default=False))


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
    if not isinstance(summarizer, Summarizer):     # what the run reads of it is declared there
        raise ConfigError(f"summarizer: {cfg.summarizer.get('_target_')} is not a summarizer: a summarizer subclasses "
                          "hermes_pipeline.summarizers.base.Summarizer")
    if cfg.dry_run:     # the embedded summarizer writes; the configured one is only priced
        model = summary_model(cfg, summarizer.model)
        pricing = Pricing(Prices.of(model.prices), float(model.token_scale), _batch_enabled(cfg))
        return dry_run_summarizer(summarizer, pricing, str(cfg.model.tokenizer))
    summarizer.check()   # a missing key or a wrong-provider model fails here, before any file is read
    return summarizer


def plugin_search_dirs(cfg: DictConfig) -> list[Path]:
    return [Path.cwd(), *(Path(d).expanduser() for d in cfg.plugins.dirs)]


def build_engine(cfg: DictConfig, summarizer: Summarizer, policy: CachingPolicy,
                 store_dir: Path) -> tuple[ContextEngine, Resolved]:
    tools = StageTools(summarizer, TokenCounter(cfg.model.tokenizer), policy if policy.enabled else None)
    stages = tuple(_stage(stage, tools) for stage in cfg.pipeline.stages)
    services = EngineServices(
        budgets=budgets_from_config(cfg), settings=plan_settings_from_config(cfg), tools=tools,
        stages=stages, enabled=bool(cfg.compression.enabled), hygiene_min_messages=int(cfg.hygiene.min_messages),
        store_dir=store_dir, model_name=str(cfg.model.name))
    resolved = resolve_engine(str(cfg.context.engine), plugin_search_dirs(cfg))
    options = OmegaConf.to_container(cfg.context.options, resolve=True) if resolved.fallback is None else {}
    if cfg.dry_run and options.get("store"):
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
    return build_engine(cfg, summarizer, markers_policy(cfg, rule_policy(cfg)), Path(store_dir))[0]


def rule_policy(cfg: DictConfig) -> CachingPolicy:
    """Prompt caching by the auto rule (a Claude model on Anthropic or OpenRouter) or as configured."""
    return caching_policy(cfg.model.name, cfg.model.provider, cfg.prompt_caching.enabled, cfg.prompt_caching.cache_ttl)


def markers_policy(cfg: DictConfig, policy: CachingPolicy) -> CachingPolicy:
    """The markers the engine adds: the rule's, except in fit mode."""
    if cfg.compression.mode == "fit":     # training data: kept messages are written as they were read
        return CachingPolicy(False, policy.ttl, policy.native_anthropic, "compression.mode=fit adds no markers")
    return policy


def caching_from_config(cfg: DictConfig) -> CachingPolicy:
    """The markers an engine built from this config adds (show.py rebuilds one)."""
    return markers_policy(cfg, rule_policy(cfg))


def exam_plan(cfg: DictConfig, summarizer: Summarizer) -> ExamPlan | None:
    """exam.*, checked: the exam needs a model's requests (an LLM summarizer's) and known baselines."""
    e = cfg.exam
    if not e.enabled:
        return None
    unknown = [b for b in e.baselines if b not in BASELINES]
    if unknown:
        raise ConfigError(f"exam.baselines: {', '.join(map(str, unknown))}: the baselines are {', '.join(BASELINES)}")
    if summarizer.calls is None:
        raise ConfigError(
            f"exam.enabled=true needs a model to write, answer and grade the exam, and summarizer={summarizer.name} "
            "calls none: use summarizer=anthropic (ANTHROPIC_API_KEY) or summarizer=openai (OPENAI_API_KEY; "
            "auxiliary.compression.base_url=... for vLLM, Ollama, llama.cpp), or add "
            "summarizer.batch.export_to=FILE to such a summarizer to answer its requests elsewhere")
    if cfg.dry_run:
        raise ConfigError("exam.enabled=true in a dry run: a dry run writes no transcripts, so there is nothing "
                          "to examine (and it calls no model)")
    return ExamPlan(sample=int(e.sample), questions=int(e.questions), baselines=tuple(dict.fromkeys(e.baselines)),
                    input_format=str(cfg.input.format), output_format=str(cfg.output.format))


def output_dir(cfg: DictConfig) -> Path | None:
    """The persistent output tree, if any; incremental runs need one."""
    folder = Path(str(cfg.output.dir)).expanduser() if cfg.output.dir else None
    if cfg.incremental.enabled and folder is None:
        raise ConfigError("incremental=true needs output.dir=PATH: the tree whose state it keeps")
    return folder


def output_plan(cfg: DictConfig, run_dir: Path | None) -> OutputPlan:
    folder = output_dir(cfg)
    return OutputPlan(run_dir, folder, bool(cfg.dry_run), bool(cfg.incremental.enabled),
                      config_fingerprint(cfg) if folder else "", input_roots(input_specs(cfg)),
                      bool(cfg.incremental.input_moved))


def run_options(cfg: DictConfig, resolved: Resolved, replay: ReplaySettings | None) -> RunOptions:
    return RunOptions(input_format=str(cfg.input.format), output_format=str(cfg.output.format),
                      max_record_bytes=int(cfg.input.max_record_bytes),
                      progress="none" if cfg.quiet else str(cfg.progress),
                      engine_fallback=resolved.fallback, replay=replay, prune_removed=bool(cfg.incremental.prune),
                      native=WriteOptions(history=str(cfg.output.native.history), store=str(cfg.output.native.store)))


def build(cfg: DictConfig, run_dir: Path | None = None) -> Run:
    """The run of a composed config: validated, its parts built (the runner started), its input files
    found (none of them inside run_dir or output.dir). Raises ConfigError (SummarizerFatalError: a
    summarizer that cannot start, ValueError: an input that cannot be listed) before anything is read."""
    output_dir(cfg)         # incremental without output.dir is said first
    validate(cfg)
    output = output_plan(cfg, run_dir)
    store_dir = (None if output.dry_run else output.dir) or run_dir or Path(".")   # an engine's own files
    policy = rule_policy(cfg)
    markers = markers_policy(cfg, policy)
    summarizer = build_summarizer(cfg)
    exam = exam_plan(cfg, summarizer)       # before anything starts: a config error stops nothing half built
    engine, resolved = build_engine(cfg, summarizer, markers, store_dir)
    runner = _instantiate(cfg.runner, "runner")
    # workers get the config resolved here: ${hydra:...} does not resolve inside them
    make_engine = partial(engine_in_worker, OmegaConf.to_container(cfg, resolve=True), str(store_dir))
    runner.start(engine, make_engine, auto_concurrency=summarizer.max_in_flight)
    run = Run(
        engine=engine, summarizer=summarizer, caching=markers, runner=runner, resolved=resolved,
        input_specs=tuple(input_specs(cfg)), inputs=Inputs(), output=output,
        options=run_options(cfg, resolved, replay_settings_from_config(cfg, policy)), quiet=bool(cfg.quiet),
        prices=dict(cfg.model.prices),
        # the summary calls at their own model's prices (the summarizer knows which)
        summarizer_prices=Prices.of(summary_model(cfg, summarizer.model).prices).to_dict(),
        # a summarizer with no cache marker of its own (extractive, openai): the schema's default TTL
        cache_ttl=str(cfg.summarizer.get("cache_ttl") or AnthropicSummarizerConfig.cache_ttl),
        max_fallback_share=summarizer.max_fallback_share,
        exam=exam)
    try:
        found = find_inputs(list(run.input_specs), exclude=[p for p in (run_dir, output.dir) if p],
                            output_dir=output.dir)
        if run.options.native.store == IN_PLACE and run.options.output_format in ("same", HermesStoreFormat.name):
            refuse_unknown_stores(found.files)
    except BaseException:
        run.close()
        raise
    return replace(run, inputs=found)


def refuse_unknown_stores(files: list) -> None:
    """In place, a Hermes store of a layout this release does not know stops the run before anything is
    read: nothing may be written into it (formats/hermes_store/layout.py)."""
    for input_file in files:
        if is_store(input_file.path):
            refused = store_layout(input_file.path).refusal(input_file.path, in_place=True)
            if refused:
                raise ConfigError(refused)
