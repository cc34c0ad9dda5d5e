"""The command line: compose the config with Hydra, build, run. Nothing else."""
from __future__ import annotations

import json
import logging
import sys
import time
from functools import partial
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from hermes_pipeline.batch import BatchRun, RunOptions
from hermes_pipeline.build import build, engine_from_container
from hermes_pipeline.config import ConfigError
from hermes_pipeline.formats import get_format
from hermes_pipeline.inputs import resolve_inputs
from hermes_pipeline.replay_run import settings_from_config as replay_settings
from hermes_pipeline.summarizers.base import SummarizerFatalError

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")
EXIT_OK, EXIT_CONFIG, EXIT_QUARANTINED, EXIT_STOPPED = 0, 1, 2, 3
log = logging.getLogger("hermes_pipeline")
_exit_codes: list[int] = []


def print_table(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title="hermes-pipeline run", show_header=True)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for status, n in summary["statuses"].items():
        table.add_row(status, str(n))
    table.add_row("tokens before", f"{summary['tokens_before']:,}")
    table.add_row("tokens after", f"{summary['tokens_after']:,}")
    table.add_row("token ratio", str(summary["token_ratio"]))
    table.add_row("fallbacks", str(summary["fallbacks"]))
    table.add_row("wall seconds", str(summary["wall_seconds"]))
    table.add_row("MB/s", str(summary["mb_per_second"]))
    Console(stderr=False).print(table)


def runner_concurrency(cfg: DictConfig) -> int:
    """`auto`: as many conversations at once as the summarizer keeps requests in flight."""
    value = cfg.runner.concurrency
    if value in (None, "auto"):
        return int(cfg.summarizer.get("max_in_flight") or 1)
    return int(value)


def run(cfg: DictConfig, run_dir: Path) -> int:
    started = time.perf_counter()
    try:
        components = build(cfg)
        inputs = resolve_inputs(str(cfg.input.path), exclude=run_dir)
        replay = replay_settings(cfg)
        for key, default in (("input.format", "auto"), ("output.format", "same")):
            if str(OmegaConf.select(cfg, key)) != default:
                get_format(str(OmegaConf.select(cfg, key)))      # an unknown name is a config error
    except (ConfigError, SummarizerFatalError, ValueError) as error:
        print(f"hermes-pipeline: error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    print(components.caching.status_line(), flush=True)
    options = RunOptions(input_format=str(cfg.input.format), output_format=str(cfg.output.format),
                         max_record_bytes=int(cfg.input.max_record_bytes),
                         concurrency=runner_concurrency(cfg), processes=int(cfg.runner.processes),
                         progress=str(cfg.progress), replay=replay)
    # workers get the config resolved here: ${hydra:...} does not resolve inside them
    engine_factory = partial(engine_from_container, OmegaConf.to_container(cfg, resolve=True))
    try:
        totals = BatchRun(components.engine, run_dir, options, engine_factory).run(inputs)
    finally:
        components.summarizer.close()
    summary = totals.summary(time.perf_counter() - started, dict(cfg.model.prices),
                             components.caching.status_line(),   # cache writes at the summarizer's TTL price
                             cache_ttl=str(cfg.summarizer.get("cache_ttl") or "5m"))
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if cfg.progress != "none":
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


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _hydra_entry(cfg: DictConfig) -> None:
    _exit_codes.append(run(cfg, Path(HydraConfig.get().runtime.output_dir)))


def _expand_shorthand(argv: list[str]) -> list[str]:
    """`input=PATH` is short for `input.path=PATH` (input itself is a group of keys)."""
    return [("input.path=" + a[len("input="):]) if a.startswith("input=") else a for a in argv]


def main() -> None:
    sys.argv = [sys.argv[0], *_expand_shorthand(sys.argv[1:])]
    _hydra_entry()
    sys.exit(max(_exit_codes, default=EXIT_OK))
