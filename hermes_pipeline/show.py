"""`hermes-pipeline-show RUN_DIR ID`: one conversation of a run, before and after, in a terminal.

Before: the conversation read again from its input, as the run read it (the
same format detection and input repairs), one line per message, the span the
summary replaced marked. After: the written conversation (the run's
transcripts/ or output.dir), one line per message, the summary in full. Then
the row's quality: what of the removed part the compacted conversation still
names, and what it missed. A dry run writes no transcripts: its "after" is
computed again here, with the run's own config and the embedded summarizer it
used (the same bytes: it is deterministic).
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from hermes_pipeline.config.command_line import UsageParser
from hermes_pipeline.reports.render import in_full, one_line, stdout_to_devnull, style_for, width_of
from hermes_pipeline.run.read_back import NotFound, conversation_after, conversation_before
from hermes_pipeline.transcript import Conversation, is_summary_message

KINDS = (("files_written", "files changed"), ("errors", "last errors"), ("user_turns", "user turns"),
         ("identifiers", "identifiers"), ("files_read", "files read"))


class ShowError(Exception):
    """What cannot be shown, in words: exit 1."""


def _parser() -> UsageParser:
    parser = UsageParser(prog="hermes-pipeline-show", description="One conversation of a run, before "
                                     "and after: the removed span marked, the summary, its quality row.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run folder (holding manifest.jsonl)")
    parser.add_argument("id", metavar="ID", help="a conversation id of its manifest, or a source FILE:LINE")
    parser.add_argument("--source", default=None, help="FILE:LINE, when several conversations share the id")
    parser.add_argument("--full", action="store_true", help="every message in full, not one line each")
    return parser


def find_row(run_dir: Path, name: str, source: str | None) -> tuple[dict, list[dict]]:
    """The manifest row of a conversation, and the other rows of the same id."""
    path = run_dir / "manifest.jsonl"
    if not path.is_file():
        raise ShowError(f"{run_dir} is not a run folder: it has no manifest.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    mine = [r for r in rows if (r["id"] == name or r["source"] == name) and source in (None, r["source"])]
    if not mine:
        # a quarantined record has no id: its source FILE:LINE is what finds it
        known = ", ".join(str(r["id"] if r["id"] is not None else r["source"]) for r in rows[:5]) \
            + (", ..." if len(rows) > 5 else "")
        raise ShowError(f"no conversation {name!r} in {path} (its ids: {known})")
    return mine[0], mine[1:]


def before(row: dict, cfg) -> Conversation:
    try:
        return conversation_before(row["source"], str(cfg.input.format))
    except NotFound as error:
        raise ShowError(str(error)) from None


def after(row: dict, cfg, run_dir: Path, conversation: Conversation) -> tuple[list[dict], str]:
    """The compacted messages and where they come from."""
    from hermes_pipeline.inputs.find import resolve_inputs
    if OmegaConf.select(cfg, "dry_run", default=False):
        return _compacted_again(cfg, conversation), "computed again: a dry run writes no transcripts"
    source = Path(row["source"].rsplit(":", 1)[0]).resolve()
    relative = next((f.relative for f in resolve_inputs(str(cfg.input.path)) if f.path.resolve() == source), None)
    root = Path(str(cfg.output.dir)).expanduser() if cfg.output.dir else run_dir / "transcripts"
    out_path = root / relative if relative is not None else None
    if out_path is None or not out_path.is_file():
        raise ShowError(f"the output of {row['source']} is not at {out_path or root} any more")
    try:
        return conversation_after(conversation, out_path, str(cfg.output.format), str(cfg.input.format)), str(out_path)
    except NotFound as error:
        raise ShowError(str(error)) from None


def _compacted_again(cfg, conversation: Conversation) -> list[dict]:
    from hermes_pipeline import components
    with tempfile.TemporaryDirectory() as scratch:     # an lcm store, if any, goes nowhere that stays
        summarizer = components.build_summarizer(cfg)
        engine, _ = components.build_engine(cfg, summarizer, components.caching_from_config(cfg), Path(scratch))
        try:
            return engine.compress(conversation).messages
        finally:
            engine.close()
            summarizer.close()


def quality_lines(quality: dict | None) -> list[str]:
    if not quality:
        return ["  (no quality row: nothing was removed)"]
    kept = " · ".join(f"{label} {quality[k]['kept']}/{quality[k]['total']}" for k, label in KINDS if k in quality)
    open_errors = quality.get("errors_open", {}).get("total")
    lines = [f"  score {quality['score']:.3f} · {kept}" + (f" (open {open_errors})" if open_errors else "")]
    for kind, label in KINDS:
        for item in (quality.get("missed") or {}).get(kind, []):
            lines.append(f"  missed {label}: {item}")
    return lines


def render(row: dict, conversation: Conversation, compacted: list[dict] | None, where: str, full: bool,
           others: list[dict]) -> list[str]:
    style, width = style_for(sys.stdout), width_of(sys.stdout)
    rule = lambda text: style.bold(f"── {text} ──")
    tokens = f"tokens {row['tokens_before']:,} → {row['tokens_after']:,}" if row["tokens_before"] is not None else ""
    out = [rule(f"{row['id']} · {row['source']} · {row['format']} · {row['status']} (trigger {row['trigger']})"),
           f"{tokens} · messages {row['messages_before']} → {row['messages_after']}"
           + (f" · summary {row['summary_tokens']:,} tokens by {row['summarizer']}" if row["summarizer"] else "")]
    if row.get("fallback"):
        out.append(f"fallback: {row['fallback']}")
    if row.get("noop_reason"):
        out.append(f"unchanged: {row['noop_reason']}")
    start, end = row.get("removed_span") or (None, None)
    said = f"messages {start}-{end - 1} removed ({end - start}), replaced by the summary" if start is not None \
        else "the removed span is not recorded by this engine" if row["status"] == "compacted" else "nothing removed"
    out.append(rule(f"before: {len(conversation.messages)} messages; {said}"))
    for index, message in enumerate(conversation.messages):
        removed = start is not None and start <= index < end
        line = one_line(index, message, width, mark="- " if removed else "  ")
        out.append(style.dim(line) if removed else line)
        if full:
            out.append(in_full(message))
    if compacted is not None:
        out.append(rule(f"after: {len(compacted)} messages · {where}"))
        for index, message in enumerate(compacted):
            summary = is_summary_message(message)
            out.append(one_line(index, message, width, mark="» " if summary else "  "))
            if summary or full:
                out.append(in_full(message))
    out.append(rule("quality of what was removed"))
    out += quality_lines(row.get("quality"))
    if others:
        out.append(style.dim(f"({len(others)} more conversation(s) with this id: --source "
                             f"{' | '.join(r['source'] for r in others[:3])})"))
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        row, others = find_row(args.run_dir, args.id, args.source)
        if row["status"] not in ("compacted", "unchanged"):
            raise ShowError(f"{row['source']}: {row['status']}: {row['error']}")
        cfg = OmegaConf.load(args.run_dir / ".hydra" / "config.yaml")
        conversation = before(row, cfg)
        compacted, where = after(row, cfg, args.run_dir, conversation) if row["status"] == "compacted" else (None, "")
        text = "\n".join(render(row, conversation, compacted, where, args.full, others)) + "\n"
    except ShowError as error:
        print(f"hermes-pipeline-show: {error}", file=sys.stderr)
        return 1
    try:
        sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
        sys.stdout.flush()
    except BrokenPipeError:       # `| head`: the reader had what it wanted
        stdout_to_devnull()
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
