"""The commands' argument parsing: a usage error exits 1 (EXIT_USAGE) with one line saying what is wrong.

argparse's own status for a usage error is 2, which hermes-pipeline's exit table
gives to "records were quarantined": a cron line that lets 2 pass would hide a
typo. Every command parses with UsageParser; hermes-pipeline checks Hydra's own
options the same way before Hydra reads them (check_hydra_options).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from hermes_pipeline.config.validate import ConfigError

EXIT_USAGE = 1       # README: exit status (the code of a bad config: nothing was read)


class UsageParser(argparse.ArgumentParser):
    """argparse, with a usage error's exit status 1; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _raise(message: str) -> NoReturn:
    raise ConfigError(message)


def check_hydra_options(argv: list[str]) -> argparse.Namespace:
    """Hydra's options (`--cfg`, `--multirun`, ...) as Hydra's own parser reads them; raises ConfigError for what
    it would refuse with exit 2, or stop on with a traceback. Settings (key=value) are checked elsewhere."""
    from hydra._internal.utils import get_args_parser
    parser = get_args_parser()
    parser.error = _raise
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        option = unknown[0]
        name, sep, value = option.lstrip("-").partition("=")
        following = argv[argv.index(option) + 1:argv.index(option) + 2] if not sep else []
        if not sep and following and "=" not in following[0] and not following[0].startswith("-"):
            value, sep = following[0], "="
        hint = f": settings are key=value ({name}={value})" if sep else ""
        raise ConfigError(f"unknown option {option}{hint}; `hermes-pipeline --help` lists the settings and options")
    if args.resolve and not (args.cfg or args.help):
        raise ConfigError("--resolve goes with --cfg job|hydra|all (it resolves the config --cfg prints)")
    if args.shell_completion and not any(o.startswith(("install=", "uninstall=", "query=")) for o in args.overrides):
        raise ConfigError("--shell-completion needs install=SHELL, uninstall=SHELL or query=SHELL (SHELL: bash, zsh "
                          "or fish)")
    if args.experimental_rerun and not Path(args.experimental_rerun).is_file():
        raise ConfigError(f"--experimental-rerun {args.experimental_rerun}: no such file (a run's "
                          ".hydra/config.pickle)")
    return args
