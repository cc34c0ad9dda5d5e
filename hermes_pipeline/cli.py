"""The command line: compose the config with Hydra, build the components, run. Nothing else."""
from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hermes_pipeline import __version__
from hermes_pipeline.config import ConfigError, check_override_keys
from hermes_pipeline.config.files import config_dir
from hermes_pipeline.config.schema import register
from hermes_pipeline.inputs import resolve_inputs
from hermes_pipeline.summarizers.base import SummarizerFatalError

CONF_DIR = str(config_dir())
EXIT_OK, EXIT_CONFIG, EXIT_QUARANTINED, EXIT_STOPPED = 0, 1, 2, 3
NOISY_LOGGERS = ("httpx", "httpcore", "anthropic", "openai")   # a line per request, unless -v
log = logging.getLogger("hermes_pipeline")
_exit_codes: list[int] = []


def run(cfg: DictConfig, run_dir: Path) -> int:
    from hermes_pipeline import components
    from hermes_pipeline.console import print_table
    from hermes_pipeline.formats import get_format
    from hermes_pipeline.replay_run import settings_from_config as replay_settings
    from hermes_pipeline.runners.executor import Executor, RunOptions
    started = time.perf_counter()
    try:
        built = components.build(cfg, store_dir=run_dir)
        inputs = resolve_inputs(str(cfg.input.path), exclude=run_dir)
        replay = replay_settings(cfg)
        for name in (cfg.input.format, cfg.output.format):
            if name not in ("auto", "same"):
                get_format(str(name))      # an unknown name is a config error
    except (ConfigError, SummarizerFatalError, ValueError) as error:
        print(f"hermes-pipeline: error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    if not cfg.quiet:
        print(built.caching.status_line(), flush=True)
    options = RunOptions(input_format=str(cfg.input.format), output_format=str(cfg.output.format),
                         max_record_bytes=int(cfg.input.max_record_bytes), progress=str(cfg.progress),
                         engine_fallback=built.resolved.fallback, replay=replay)
    interrupted = False
    try:
        totals = Executor(built.runner, run_dir, options).run(inputs)
    except KeyboardInterrupt:
        interrupted = True
        totals = None
    finally:
        built.runner.close()
        built.engine.close()
        built.summarizer.close()
    if interrupted:
        print("hermes-pipeline: interrupted", file=sys.stderr)
        return EXIT_STOPPED
    summary = totals.summary(time.perf_counter() - started, dict(cfg.model.prices),
                             built.caching.status_line(),   # cache writes at the summarizer's TTL price
                             cache_ttl=str(cfg.summarizer.get("cache_ttl") or "5m"))
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if not cfg.quiet:
        print_table(summary)
        print(f"run folder: {run_dir}", flush=True)
    if totals.stopped:
        print(f"hermes-pipeline: run stopped early: {totals.stopped}", file=sys.stderr)
        return EXIT_STOPPED
    bad = summary["statuses"]["quarantined"] + summary["statuses"]["failed"]
    if bad:
        print(f"hermes-pipeline: {bad} record(s) quarantined; see {run_dir / 'quarantine.jsonl'}", file=sys.stderr)
        return EXIT_QUARANTINED
    return EXIT_OK


def _quiet_libraries() -> None:
    if not HydraConfig.get().verbose:
        for name in NOISY_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _hydra_entry(cfg: DictConfig) -> None:
    _quiet_libraries()
    _exit_codes.append(run(cfg, Path(HydraConfig.get().runtime.output_dir)))


def _expand_shorthand(argv: list[str]) -> list[str]:
    """`input=PATH` is short for `input.path=PATH` (input itself is a group of keys)."""
    return [("input.path=" + a[len("input="):]) if a.startswith("input=") else a for a in argv]


def _print_help() -> None:
    from hydra import compose, initialize_config_dir

    from hermes_pipeline.console import help_text
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config")
    sys.stdout.write(help_text(cfg))


def main() -> None:
    argv = _expand_shorthand(sys.argv[1:])
    register()
    if "--version" in argv or "-V" in argv:
        print(f"hermes-pipeline {__version__}")
        return
    if "--help" in argv or "-h" in argv:
        _print_help()
        return
    try:
        check_override_keys(argv)
    except ConfigError as error:
        print(f"hermes-pipeline: error: {error}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    sys.argv = [sys.argv[0], *argv]
    try:
        _hydra_entry()
    except KeyboardInterrupt:      # during composition or start-up: no traceback
        print("hermes-pipeline: interrupted", file=sys.stderr)
        sys.exit(EXIT_STOPPED)
    sys.exit(max(_exit_codes, default=EXIT_OK))
