"""`hermes-pipeline-lcm`: read an lcm store from the shell.

  hermes-pipeline-lcm --store PATH grep [-F] [-i] [--limit N] PATTERN
      one line per removed message that matches, tab-separated:
      conversation id, file:line it was read from, its position in the conversation
      ("message 37"), role, the span's pointer, a snippet
  hermes-pipeline-lcm --store PATH expand ID [ID ...] [--message N] [--json]
      ID: a conversation id (its input records, as read) or a pointer (lcm:<id> from a summary
      or from grep: the removed messages, each as the input had it); --message N: only message N
      of a span; --json: each stored object on one line, exactly as stored (for scripts)
  hermes-pipeline-lcm --store PATH show ID [--source FILE:LINE] [--full]
      the conversation as compacted, each summary's stored originals listed under it
  hermes-pipeline-lcm --store PATH list
      one line per stored conversation: record id<TAB>conversation id<TAB>source<TAB>format

Pointers may be written lcm:<id>, <id>, or a unique prefix of 8+ hex digits.
Exit status: 0 found; 1 nothing found (grep), an unknown id, nothing to show, a usage error, or a store
that cannot be read (said on stderr). Never 2: that is hermes-pipeline's "records were quarantined".
"""
from __future__ import annotations

import re
import sqlite3
import sys

from hermes_pipeline.config.command_line import EXIT_USAGE, UsageParser
from hermes_pipeline.engine.lcm.browse import Browser, as_read, message_where, pointers_of, span_messages
from hermes_pipeline.engine.lcm.store import LCMStore
from hermes_pipeline.reports.render import in_full, one_line, pretty_json, stdout_to_devnull, style_for, width_of
from hermes_pipeline.transcript import is_summary_message, message_text

SHORT = 12          # hex digits of a pointer shown to people (any unique 8+ resolve)


class Usage(Exception):
    """A command given what it cannot take: exit 1, with the reason."""


def _parser() -> UsageParser:
    parser = UsageParser(prog="hermes-pipeline-lcm", description="Search, expand and show the "
                                     "originals kept by the lcm context engine.")
    parser.add_argument("--store", required=True, help="the SQLite store (a run's lcm.sqlite, or lcm.store=PATH)")
    commands = parser.add_subparsers(dest="command", required=True)
    grep = commands.add_parser("grep", help="search removed messages: conversation, file:line, position, role, "
                                            "pointer, snippet per hit")
    grep.add_argument("pattern", help="a regular expression (Python syntax)")
    grep.add_argument("-F", "--fixed-strings", action="store_true", help="match the pattern literally")
    grep.add_argument("-i", "--ignore-case", action="store_true")
    grep.add_argument("--limit", type=int, default=None, help="at most this many hits")
    expand = commands.add_parser("expand", help="records as they were read: a conversation's, or a span's")
    expand.add_argument("ids", nargs="+", metavar="ID", help="a conversation id or a pointer (lcm:<id>)")
    expand.add_argument("--message", type=int, default=None, metavar="N", help="only message N of a span")
    expand.add_argument("--json", action="store_true", help="each stored object on one line, as stored")
    show = commands.add_parser("show", help="a compacted conversation, each summary's originals under it")
    show.add_argument("id", metavar="ID", help="a conversation id")
    show.add_argument("--source", default=None, help="the input FILE:LINE, when several conversations share the id")
    show.add_argument("--full", action="store_true", help="every message in full, not one line each")
    commands.add_parser("list", help="the stored conversations and their record ids")
    return parser


class Out:
    def __init__(self):
        self.stream = sys.stdout.buffer
        self.style, self.width = style_for(sys.stdout), width_of(sys.stdout)

    def line(self, text: str = "") -> None:
        self.stream.write((text + "\n").encode("utf-8", "backslashreplace"))

    def raw(self, data: bytes) -> None:
        self.stream.write(data + b"\n")

    def rule(self, text: str) -> None:
        self.line(self.style.bold(f"── {text} ──"))


def grep(browser: Browser, args, out: Out) -> int:
    hits = browser.store.grep(args.pattern, fixed=args.fixed_strings, ignore_case=args.ignore_case, limit=args.limit)
    pattern = re.compile(re.escape(args.pattern) if args.fixed_strings else args.pattern,
                         re.IGNORECASE if args.ignore_case else 0)
    for f in browser.found(hits, pattern):
        out.line(f"{f.conversation}\t{f.where}\tmessage {f.position}\t{f.role}\t{f.pointer[:4 + SHORT]}\t{f.snippet}")
    return 0 if hits else 1


def expand(browser: Browser, args, out: Out) -> int:
    missing = 0
    for name in args.ids:
        try:
            kind, ids = browser.resolve(name)
            if args.message is not None and (kind != "object" or browser.store.kind(ids[0]) != "span"):
                raise Usage(f"{name}: --message N takes a pointer to removed messages (lcm:<id> from a summary "
                            "or from grep)")
            for oid in ids:
                if args.json:
                    out.raw(browser.store.get_json(oid))
                elif browser.store.kind(oid) == "span":
                    _span(browser, oid, args.message, out)
                else:
                    _record(browser, oid, out)
        except KeyError as error:
            print(f"hermes-pipeline-lcm: {error.args[0]}", file=sys.stderr)
            missing += 1
    return 1 if missing else 0


def _record(browser: Browser, oid: str, out: Out) -> None:
    value = browser.get(oid)
    about = [row for row in browser.store.conversations(browser.store.kind(oid)) if row[0] == oid]
    named = " · ".join(f"conversation {c} · {s}" + (f" · {f}" if f else "") for _, c, s, f in about)
    if isinstance(value, list):         # one conversation per file: the values of its input lines
        out.rule(f"lcm:{oid[:SHORT]} · {named} · {len(value)} input record(s), as read")
        for n, item in enumerate(value, 1):
            out.line(out.style.dim(f"── record {n} of {len(value)} ──"))
            out.line(pretty_json(item))
    else:
        out.rule(f"lcm:{oid[:SHORT]} · {named} · as read")
        out.line(pretty_json(value))


def _span(browser: Browser, oid: str, only: int | None, out: Out) -> None:
    span = browser.get(oid)
    first, last = span["start"], span["end"] - 1
    if only is not None and not first <= only <= last:
        raise KeyError(f"lcm:{oid[:SHORT]} holds messages {first}-{last}, not message {only}")
    source = span.get("source") or browser.record_source(span.get("record", "")) or "?"
    out.rule(f"lcm:{oid[:SHORT]} · messages {first}-{last} of conversation {span['conversation']} · {source}, "
             "removed by a compaction")
    for start, end, original, canonical in as_read(span["messages"], first):
        if only is not None and not start <= only <= end:
            continue
        numbers = f"message {start}" if start == end else f"messages {start}-{end}"
        out.line(out.style.dim(f"── {numbers} · {canonical.get('role', '?')} · {message_where(span, start, source)} ──"))
        out.line(pretty_json(original))


def show(browser: Browser, args, out: Out) -> int:
    store = browser.store
    stored = [row for row in store.conversations("compacted", args.id) if args.source in (None, row[2])]
    if not stored:
        read = store.conversations(conversation_id=args.id)
        why = f"it is stored as read, never compacted: expand {args.id}" if read else "no conversation of that id"
        print(f"hermes-pipeline-lcm: no compaction of {args.id!r} in {store.path} ({why})", file=sys.stderr)
        return 1
    oid, _, source, _ = stored[-1]
    compacted = browser.get(oid)
    messages = compacted["messages"]
    out.rule(f"conversation {args.id} · {source} · compacted to {len(messages)} messages · lcm:{oid[:SHORT]}")
    for index, message in enumerate(messages):
        summary = is_summary_message(message)
        out.line(one_line(index, message, out.width, mark="» " if summary else "  "))
        if summary or args.full:
            out.line(in_full(message))
        if summary:
            _originals(browser, message, out)
    if len(stored) > 1:
        out.line(out.style.dim(f"({len(stored) - 1} earlier compaction(s) of {args.id} stored; --source FILE:LINE "
                               f"picks one: {', '.join(sorted({row[2] for row in stored}))})"))
    return 0


def _originals(browser: Browser, summary: dict, out: Out) -> None:
    pointers = pointers_of(message_text(summary))
    if not pointers:
        out.line(out.style.dim("        stored originals: none (a summary written before this store, by the agent "
                               "or another engine)"))
        return
    out.line("        stored originals:")
    for pointer in pointers:
        span = browser.get(pointer)
        source = span.get("source") or browser.record_source(span.get("record", "")) or "?"
        out.line(f"          lcm:{pointer[:SHORT]}  messages {span['start']}-{span['end'] - 1} "
                 f"({len(span['messages'])}) of {span['conversation']} · {source}")
        for position, message in span_messages(span):
            out.line(out.style.dim(one_line(position, message, out.width, mark="          ")))


def listing(browser: Browser, args, out: Out) -> int:
    for row in browser.store.conversations():
        out.line("\t".join(str(v) for v in row))
    return 0


COMMANDS = {"grep": grep, "expand": expand, "show": show, "list": listing}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    store = LCMStore(args.store, readonly=True)
    out = Out()
    try:
        return COMMANDS[args.command](Browser(store), args, out)
    except (FileNotFoundError, sqlite3.Error, re.error, Usage) as error:
        print(f"hermes-pipeline-lcm: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:       # the reader went away (`| head -1`): it had what it wanted
        stdout_to_devnull()
        return 0
    finally:
        try:
            out.stream.flush()
        except BrokenPipeError:
            stdout_to_devnull()
        store.close()


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
