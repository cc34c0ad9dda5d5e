"""The command line: compose the config with Hydra, build the components, run. Nothing else."""
from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import sys
import threading
import time
from functools import partial
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from hermes_pipeline import __version__
from hermes_pipeline.config import ConfigError, check_override_keys
from hermes_pipeline.config.command_line import check_hydra_options
from hermes_pipeline.config.files import config_dir
from hermes_pipeline.config.schema import register
from hermes_pipeline.run.exit_codes import EXIT_CONFIG, EXIT_OK, EXIT_STOPPED, exit_code
from hermes_pipeline.summarizers.base import SummarizerFatalError

CONF_DIR = str(config_dir())
NOISY_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "anthropic", "openai")   # a line per request, unless -v
log = logging.getLogger("hermes_pipeline")
_exit_codes: list[int] = []
DRY_RUN_LINE = ("Dry run: no model is called and no transcript is written; the manifest and summary.json say "
                "what a run would do (dry_run: LLM calls, tokens, estimated cost)")


_signals: list[str] = []      # the signals that stopped this run, by name


def _stop_on_signals(stop: threading.Event) -> None:
    """SIGINT/SIGTERM: take no new work, finish what is in flight; a second one abandons it."""
    def handler(signum, _frame):
        _signals.append(signal.Signals(signum).name)
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        # os.write, not print: the interrupted code may be inside a write to stderr itself
        os.write(2, f"hermes-pipeline: {signal.Signals(signum).name}: finishing the conversations in flight, "
                    "then stopping (again to abandon them)\n".encode())
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(signum, handler)
        except ValueError:     # not the main thread (e.g. a launcher's worker): the default stays
            pass


def run(cfg: DictConfig, run_dir: Path) -> int:
    """Build the run from the config (components.build, the only reader of it), run it, say how it ended."""
    from hermes_pipeline import components
    from hermes_pipeline.run.run_folder import RunFolder
    started = time.perf_counter()
    stop = threading.Event()
    _stop_on_signals(stop)
    built = None
    try:
        built = components.build(cfg, run_dir)
        folder = RunFolder(run_dir)
    except (ConfigError, SummarizerFatalError, ValueError) as error:
        if built is not None:
            built.close()
        print(f"hermes-pipeline: error: {error}", file=sys.stderr)
        _drop_unused(run_dir)
        return EXIT_CONFIG
    return _run_built(built, folder, run_dir, stop, started)


def _run_built(built, folder, run_dir: Path, stop: threading.Event, started: float) -> int:
    """Log what the run reads, open its output, run the executor, write summary.json: the exit status."""
    from hermes_pipeline.reports.console import print_table
    from hermes_pipeline.run.executor import Executor
    from hermes_pipeline.run.incremental import OutputLocked
    from hermes_pipeline.run.run_folder import run_log
    dry, inputs, found = built.dry_run, built.inputs.files, built.inputs
    output_dir = built.output.dir
    run_log.info("hermes-pipeline %s: input %s (%d file(s), %.1f MB%s); engine %s, summarizer %s, runner %s; "
                 "output %s%s", __version__, ", ".join(built.input_specs), len(inputs),
                 sum(f.path.stat().st_size for f in inputs) / 1e6,
                 f"; {len(found.not_read)} not read, listed below" if found.not_read else "", built.resolved.name,
                 built.summarizer.name or "?",
                 (built.runner.describe() or built.runner.name or "?").removeprefix("runner: "),
                 "none (dry run)" if dry else output_dir or f"{run_dir}/transcripts",
                 ", incremental" if built.output.incremental and not dry else "")
    if dry and (output_dir or built.output.incremental):
        run_log.warning("dry run: output.dir and incremental are not used: every input is planned as by a "
                        "first run, nothing is written or locked there")
    for path, why in found.not_read:
        run_log.info("not read: %s: %s", path, why)
    try:
        tree = built.output.open()
    except (OutputLocked, ConfigError) as error:    # said in summary.json too: the folder is not a crashed run
        code = EXIT_STOPPED if isinstance(error, OutputLocked) else EXIT_CONFIG
        run_log.error("%s", error)
        print(f"hermes-pipeline: {'' if code == EXIT_STOPPED else 'error: '}{error} (this run: {run_dir})",
              file=sys.stderr)
        built.close()
        folder.close()
        folder.write_summary({"status": "stopped", "stopped": str(error), "exit_code": code, "exit_reason": str(error),
                              "conversations": 0})
        return code
    if tree.moved_note:
        print(f"hermes-pipeline: warning: {tree.moved_note}", file=sys.stderr)
    if not built.quiet:
        _to_stdout(lambda: [print(line, flush=True) for line in (built.caching.status_line(), built.runner.describe(),
                                                                 DRY_RUN_LINE if dry else None) if line])
    from hermes_pipeline.run.batch_pass import batch_first
    executor = Executor(built.runner, folder, tree, built.options, stop,
                        first=batch_first(built.summarizer, built.engine, run_dir))
    exam = None
    try:
        totals = executor.run(inputs)
        if built.exam is not None and totals.status == "complete":
            exam = _examine(built, run_dir, tree, inputs, stop, totals)
    except KeyboardInterrupt:          # a second signal: in-flight work abandoned
        totals = executor.totals
        totals.interrupted = True
        folder.close()
    finally:
        built.close()
    finish_started = time.thread_time()
    tree.close(totals.status)
    totals.stages.add_seconds("finish", time.thread_time() - finish_started)
    summary = totals.summary(time.perf_counter() - started, built.prices, built.caching.status_line(),
                             cache_ttl=built.cache_ttl, summarizer_prices=built.summarizer_prices)
    if exam is not None:
        summary["exam"] = exam.to_dict(partial(exam_cost, built.summarizer_prices, built.cache_ttl))
    if totals.interrupted:
        summary["stopped"] = f"interrupted by {' then '.join(dict.fromkeys(_signals)) or 'a signal'}"
    code, why = exit_code(summary, built.max_fallback_share, run_dir)
    if dry:
        summary["dry_run"] = totals.would.to_dict(summary["tokens_before"], summary["tokens_after"])
    summary["exit_code"], summary["exit_reason"] = code, why
    folder.write_summary(summary)
    statuses = ", ".join(f"{n} {status}" for status, n in summary["statuses"].items() if n) or "none"
    skipped, earlier = summary.get("skipped_unchanged", 0), summary.get("quarantined_earlier", 0)
    run_log.info("finished: %s, exit status %d%s; records: %s%s%s; %.1f s", summary["status"], code,
                 f" ({why})" if why else "", statuses,
                 f"; {skipped} skipped (unchanged since the last run)" if skipped else "",
                 f", of which {earlier} quarantined by an earlier run and still in the input" if earlier else "",
                 summary["wall_seconds"])
    _ignore_signals()
    if not built.quiet:
        _to_stdout(lambda: (print_table(summary), print(f"run folder: {run_dir}", flush=True)))
    if why:
        print(f"hermes-pipeline: {why}", file=sys.stderr)
    return code


def _examine(built, run_dir: Path, tree, inputs, stop: threading.Event, totals):
    """The exam after a complete run; requests written to a file stop the run there (exit 3)."""
    from hermes_pipeline.run.exam_pass import run_exam
    from hermes_pipeline.run.run_folder import run_log
    from hermes_pipeline.summarizers.llm.batch import RequestsExported
    started = time.thread_time()
    try:
        return run_exam(built.exam, built.summarizer.calls, run_dir, tree, inputs, stop)
    except RequestsExported as exported:
        totals.stopped = str(exported)
        run_log.warning("exam: %s", exported)
        return None
    finally:
        totals.stages.add_seconds("exam", time.thread_time() - started)


def exam_cost(prices: dict, cache_ttl: str, usage: dict, batch: dict) -> float:
    """USD of the exam's requests at the summary model's prices (what a batch delivered at half of them)."""
    from hermes_pipeline.cost.replay_rows import BATCH_PRICE
    write = prices.get(f"cache_write_{cache_ttl}", prices.get("cache_write_5m", 0))
    bill = lambda u: (u.get("input_tokens", 0) * prices.get("input", 0) + u.get("output_tokens", 0) * prices.get(
        "output", 0) + u.get("cache_read_tokens", 0) * prices.get("cache_read", 0)
        + u.get("cache_write_tokens", 0) * write) / 1e6
    return round(bill(usage) - (1 - BATCH_PRICE) * bill(batch), 6)


def _to_stdout(show) -> None:
    """What the run prints for people; a reader that went away (`| head`) changes nothing about the run."""
    try:
        show()
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")


def _ignore_signals() -> None:
    """The run is recorded: a late Ctrl-C must not turn a clean exit into a traceback."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(signum, signal.SIG_IGN)
        except ValueError:     # not the main thread
            pass


def _drop_unused(run_dir: Path) -> None:
    """A run refused at start-up read nothing: the folder Hydra made for it (its config, an empty log) goes."""
    if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {".hydra", "cli.log"}:
        shutil.rmtree(run_dir, ignore_errors=True)


def _quiet_libraries() -> None:
    if not HydraConfig.get().verbose:
        for name in NOISY_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _hydra_entry(cfg: DictConfig) -> None:
    _quiet_libraries()
    _exit_codes.append(run(cfg, Path(HydraConfig.get().runtime.output_dir)))


SHORTHANDS = {"input=": "input.path=", "incremental=": "incremental.enabled="}


def _expand_shorthand(argv: list[str]) -> list[str]:
    """`input=PATH` is short for `input.path=PATH` (`input=[A,B]` for `input.paths=[A,B]`),
    `incremental=true` for `incremental.enabled=true`, `-v` for `hydra.verbose=true` (debug logs,
    per-request HTTP lines included)."""
    out = []
    for arg in argv:
        if arg in ("-v", "--verbose"):
            out.append("hydra.verbose=true")
            continue
        if arg.startswith("input=["):        # a list: several inputs
            arg = "input.paths=" + arg[len("input="):]
        for short, full in SHORTHANDS.items():
            if arg.startswith(short):
                arg = full + arg[len(short):]
        out.append(_quote_home(arg))
    return out


_HOME_VALUE = re.compile(r"(^|[\[,]\s*)(~[^,\[\]]*)")


def _quote_home(arg: str) -> str:
    """A value (or list element) starting with `~`, which Hydra's grammar refuses unquoted, quoted: a path
    as sh (cron) passes `input=~/x` on, or as quoted in `'input=[a,~/x]'`; paths are expanded where read.
    Hydra's own settings are left as given: it would not expand one (hydra.run.dir=~/r would make a `~` folder)."""
    key, sep, value = arg.partition("=")
    if not sep or "~" not in value or "'" in value or '"' in value or key.lstrip("+~").startswith("hydra."):
        return arg
    return key + sep + _HOME_VALUE.sub(lambda m: f"{m.group(1)}'{m.group(2).rstrip()}'", value)


def _refuse_used_run_folder(argv: list[str]) -> None:
    """A run folder given again is refused before Hydra writes anything into it."""
    for arg in argv:
        if arg.startswith("hydra.run.dir="):
            folder = Path(arg.split("=", 1)[1])
            if (folder / "manifest.jsonl").exists() or (folder / "summary.json").exists():
                raise ConfigError(f"run folder {folder} already holds a run; give a new hydra.run.dir")


def _print_help() -> None:
    from hydra import compose, initialize_config_dir

    from hermes_pipeline.reports.console import help_text
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config")
    sys.stdout.write(help_text(cfg))


# Options that can bring in a config setting `hydra.mode` (ours never set it)
_MODE_SOURCES = ("hydra.mode", "+hydra.mode", "~hydra.mode", "hydra/", "--config", "-cd", "-cn", "-cp")


def _compose_once(argv: list[str]) -> None:
    """Hydra composes the whole config a second time only to read `hydra.mode`, which is unset (None)
    unless the command line or another config sets it: then its own lookup stays. Saves ~0.05 s a run."""
    if any(arg.startswith(_MODE_SOURCES) for arg in argv):
        return
    from hydra._internal.hydra import Hydra
    Hydra.get_mode = lambda self, config_name, overrides: None


def main() -> None:
    argv = _expand_shorthand(sys.argv[1:])
    os.environ["HERMES_RUN_PID"] = str(os.getpid())   # ${pid:} in folder names: this run's, in its workers too
    register()
    if "--version" in argv or "-V" in argv:
        print(f"hermes-pipeline {__version__}")
        return
    if "--help" in argv or "-h" in argv:
        _print_help()
        return
    try:
        options = check_hydra_options(argv)
        if not options.shell_completion:     # its install=SHELL (or query=...) is no setting of ours
            check_override_keys(argv)
        _refuse_used_run_folder(argv)
    except ConfigError as error:
        print(f"hermes-pipeline: error: {error}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    sys.argv = [sys.argv[0], *argv]
    _compose_once(argv)
    try:
        _hydra_entry()
        from hermes_pipeline.reports.sweep import sweep_exit_codes
        code = max([*_exit_codes, *sweep_exit_codes], default=EXIT_OK)
    except SystemExit as usage:    # Hydra's argparse: 2 would say "records quarantined"; a run never exits so
        if usage.code != 2:
            raise
        code = EXIT_CONFIG
    except KeyboardInterrupt:      # during composition or start-up: no traceback
        print("hermes-pipeline: interrupted", file=sys.stderr)
        code = EXIT_STOPPED
    except BrokenPipeError:        # the output was piped to a reader that went away (`| head`)
        sys.stdout = open(os.devnull, "w")
        code = max(_exit_codes, default=EXIT_OK)
    sys.exit(code)
