"""`hermes-pipeline-lcm`: read an lcm store from the shell.

  hermes-pipeline-lcm --store PATH grep [-F] [-i] [--limit N] PATTERN
      one line per stored message that matches: id<TAB>index<TAB>snippet
  hermes-pipeline-lcm --store PATH expand ID [ID ...]
      each object's JSON on one line, exactly as stored (a record: the input record)
  hermes-pipeline-lcm --store PATH list
      one line per stored conversation: record id<TAB>conversation id<TAB>source<TAB>format

IDs may be written lcm:<id>, <id>, or a unique prefix of 8+ hex digits.
Exit status: 0 found, 1 nothing found (grep) or an unknown id (expand), 2 usage or store error.
"""
from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys

from hermes_pipeline.engine.lcm.store import LCMStore


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes-pipeline-lcm", description="Search and expand the originals "
                                     "kept by the lcm context engine.")
    parser.add_argument("--store", required=True, help="the SQLite store (a run's lcm.sqlite, or lcm.store=PATH)")
    commands = parser.add_subparsers(dest="command", required=True)
    grep = commands.add_parser("grep", help="search removed messages: id<TAB>index<TAB>snippet per hit")
    grep.add_argument("pattern", help="a regular expression (Python syntax)")
    grep.add_argument("-F", "--fixed-strings", action="store_true", help="match the pattern literally")
    grep.add_argument("-i", "--ignore-case", action="store_true")
    grep.add_argument("--limit", type=int, default=None, help="at most this many hits")
    expand = commands.add_parser("expand", help="print stored objects, one JSON line each")
    expand.add_argument("ids", nargs="+", metavar="ID")
    commands.add_parser("list", help="the stored conversations and their record ids")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    store = LCMStore(args.store, readonly=True)
    out = sys.stdout.buffer
    try:
        if args.command == "grep":
            hits = store.grep(args.pattern, fixed=args.fixed_strings, ignore_case=args.ignore_case, limit=args.limit)
            for hit in hits:
                out.write(f"{hit.object_id}\t{hit.index}\t{hit.snippet}\n".encode("utf-8", "backslashreplace"))
            return 0 if hits else 1
        if args.command == "expand":
            missing = 0
            for pointer in args.ids:
                try:
                    out.write(store.get_json(pointer) + b"\n")
                except KeyError as error:
                    print(f"hermes-pipeline-lcm: {error.args[0]}", file=sys.stderr)
                    missing += 1
            return 1 if missing else 0
        for row in store.conversations():
            out.write(("\t".join(str(v) for v in row) + "\n").encode("utf-8", "backslashreplace"))
        return 0
    except (FileNotFoundError, sqlite3.Error, re.error) as error:
        print(f"hermes-pipeline-lcm: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:       # the reader went away (`| head -1`): it had what it wanted
        _stdout_to_devnull()
        return 0
    finally:
        try:
            out.flush()
        except BrokenPipeError:
            _stdout_to_devnull()
        store.close()


def _stdout_to_devnull() -> None:
    """Python flushes stdout again at exit: into a closed pipe that would print a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
