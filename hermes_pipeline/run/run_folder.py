"""The run folder: manifest rows, the quarantine, run totals (summary.json), markers.

Rows are counted where the work happens (the executor adds each one as it is
written); summary.json is the sum, written once at the end. Until then the
folder holds an INCOMPLETE marker, so a run that died says so.
"""
from __future__ import annotations

import json
import logging
import os
import resource
import socket
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_pipeline.config import ConfigError
from hermes_pipeline.cost import dry_run
from hermes_pipeline.cost.replay_rows import BATCH_PRICE, ReplayTotals
from hermes_pipeline.engine.base import Outcome
from hermes_pipeline.inputs.jsonl import JsonlLog, Rejected
from hermes_pipeline.transcript import Conversation

INCOMPLETE = "INCOMPLETE"
# The run's own log, `cli.log` in the run folder: start, each file, each record set aside, the end.
# conf/config.yaml sends it to that file only, so the console shows what it showed before.
run_log = logging.getLogger("hermes_pipeline.run_log")

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def stage_columns(cpu: dict[str, dict]) -> dict:
    """Each stage's counts and CPU seconds as row columns prefixed with its name: `prune.tool_outputs_pruned`,
    `summarize.seconds` (RunTotals adds them up into summary.json's `stages`)."""
    return {f"{stage}.{key}": round(value, 6) if key == "seconds" else value
            for stage, entry in cpu.items() for key, value in entry.items()}


def conversation_row(conversation: Conversation, messages_after: int, outcome: Outcome, seconds: float,
                     engine_fallback: str | None = None, cpu: dict[str, dict] | None = None) -> dict:
    summary = outcome.summary
    return {
        "id": conversation.id,
        "source": conversation.source,
        "format": conversation.format,
        "status": "compacted" if outcome.compacted else "unchanged",
        "trigger": outcome.trigger,
        "messages_before": len(conversation.messages),
        "messages_after": messages_after,
        "tokens_before": outcome.tokens_before,
        "tokens_after": outcome.tokens_after,
        "tokens_recorded": conversation.recorded_prompt_tokens,
        "summary_tokens": outcome.summary_tokens,
        "summarizer": summary.summarizer if summary else None,
        "fallback": summary.fallback if summary else None,
        "calls": summary.calls if summary else 0,
        "retries": summary.retries if summary else 0,
        "cached": summary.cached if summary else False,
        "usage": dict(summary.usage) if summary else {},
        # a model's summary came by "batch" or "call"; "fallback": the embedded summarizer stood in
        "summary_via": summary_via(summary),
        "batch_items": getattr(summary, "batch_items", 0) if summary else 0,
        "usage_batch": dict(getattr(summary, "batch_usage", {})) if summary else {},   # within usage, half price
        "noop_reason": outcome.noop_reason,
        "quality": outcome.quality,
        "engine": outcome.engine,
        "engine_fallback": engine_fallback,
        "stats": {**conversation.stats, **outcome.stats},
        "repairs": conversation.notes,
        "error": None,
        "seconds": round(seconds, 4),
        **({"dry_run": summary.estimate} if summary and summary.estimate is not None else {}),
        "fits": outcome.fits,
        "fit_reason": outcome.fit_reason,
        **outcome.extra,
        **stage_columns(cpu if cpu is not None else outcome.stages),
    }


def summary_via(summary) -> str | None:
    if summary is None:
        return None
    if summary.fallback and summary.summarizer == "extractive":
        return "fallback"
    return getattr(summary, "via", None)


def problem_row(source: str, status: str, reason: str, conversation_id: str | None = None,
                messages: int | None = None) -> dict:
    return {
        "id": conversation_id, "source": source, "format": None, "status": status, "trigger": "none",
        "messages_before": messages, "messages_after": None, "tokens_before": None, "tokens_after": None,
        "tokens_recorded": None, "summary_tokens": 0, "summarizer": None, "fallback": None,
        "calls": 0, "retries": 0, "cached": False, "usage": {}, "summary_via": None, "batch_items": 0,
        "usage_batch": {}, "noop_reason": None, "quality": None, "engine": None,
        "engine_fallback": None, "stats": {}, "repairs": [], "error": reason, "seconds": 0.0,
        "fits": None, "fit_reason": None,
    }


def left_as_it_is(row: dict, why: str) -> dict:
    """The row of a compaction its output did not take (a Hermes store's session that a live Hermes holds):
    the conversation is as it was read, and the next run tries again."""
    row = {**row, "status": "unchanged", "noop_reason": f"{why}; the next run tries again",
           "messages_after": row["messages_before"], "tokens_after": row["tokens_before"], "summary_tokens": 0,
           "quality": None, "fits": None, "fit_reason": None}
    row.pop("removed_span", None)
    if row.get("native"):
        row["native"] = {**row["native"], "rows_archived": 0, "rows_inserted": 0}
    return row


@dataclass
class RunTotals:
    statuses: Counter = field(default_factory=Counter)
    triggers: Counter = field(default_factory=Counter)
    fallbacks: int = 0          # compacted with the embedded summary standing in for the configured one
    split_merged: int = 0       # the model summarized the middle in parts
    tokens_before: int = 0
    tokens_after: int = 0
    summary_tokens: int = 0
    calls: int = 0
    retries: int = 0
    usage: Counter = field(default_factory=Counter)
    usage_batch: Counter = field(default_factory=Counter)   # the part of usage a batch delivered: half price
    batch_items: int = 0
    via: Counter = field(default_factory=Counter)            # summaries by how they came: batch, call, fallback
    files: int = 0
    bytes_in: int = 0
    bytes_skipped: int = 0       # input files left unread, unchanged since the last run
    bytes_out: int = 0
    stopped: str | None = None
    interrupted: bool = False
    skipped_unchanged: int = 0  # conversations an incremental run found as they were last written
    removed: int = 0            # conversations the output tree has but the input no longer does
    removed_files: list[str] = field(default_factory=list)
    removed_outputs_deleted: bool = False    # incremental.prune: their outputs went too
    quarantined_earlier: int = 0    # records an earlier run quarantined, unchanged and still in the input
    over_context: int = 0       # outputs over the safety net's share of the context (rows with fits: false)
    replay: ReplayTotals = field(default_factory=ReplayTotals)
    quality: "QualityTotals" = field(default_factory=lambda: QualityTotals())
    would: dry_run.Totals = field(default_factory=dry_run.Totals)     # dry_run=true: what a run would do
    stages: "StageTotals" = field(default_factory=lambda: StageTotals())

    def add(self, row: dict) -> None:
        self.statuses[row["status"]] += 1
        self.triggers[row["trigger"]] += 1
        if row["fallback"]:
            if row["summarizer"] != "extractive":
                self.split_merged += 1
            elif row["status"] == "compacted":   # of the compacted ones: the share exit 4 is about
                self.fallbacks += 1
        self.over_context += row.get("fits") is False
        self.tokens_before += row["tokens_before"] or 0
        self.tokens_after += row["tokens_after"] or 0
        self.summary_tokens += row["summary_tokens"] or 0
        self.calls += row["calls"]
        self.retries += row["retries"]
        self.usage.update({k: v for k, v in row["usage"].items() if isinstance(v, int)})
        self.usage_batch.update({k: v for k, v in (row.get("usage_batch") or {}).items() if isinstance(v, int)})
        self.batch_items += row.get("batch_items") or 0
        if row.get("summary_via"):
            self.via[row["summary_via"]] += 1
        self.replay.add(row.get("replay"))
        self.quality.add(row.get("quality"))
        self.would.add(row.get("dry_run"))
        self.stages.add(row)

    @property
    def status(self) -> str:
        return "interrupted" if self.interrupted else "stopped" if self.stopped else "complete"

    def summary(self, wall_seconds: float, prices: dict, caching_line: str, cache_ttl: str = "5m",
                summarizer_prices: dict | None = None) -> dict[str, Any]:
        per_million = lambda tokens, price: round(tokens * float(price) / 1e6, 6)
        usage = {k: self.usage.get(k, 0) for k in USAGE_KEYS}
        usage_batch = {k: self.usage_batch.get(k, 0) for k in USAGE_KEYS}
        sp = summarizer_prices or prices     # summary calls are billed at the summary model's own prices
        write_price = sp.get(f"cache_write_{cache_ttl}", sp.get("cache_write_5m", 0))
        bill = lambda u: (per_million(u["input_tokens"], sp.get("input", 0))
                          + per_million(u["output_tokens"], sp.get("output", 0))
                          + per_million(u["cache_read_tokens"], sp.get("cache_read", 0))
                          + per_million(u["cache_write_tokens"], write_price))
        conversations = sum(self.statuses.values())
        return {
            "status": self.status,
            "conversations": conversations,
            "skipped_unchanged": self.skipped_unchanged,
            # of which quarantined by an earlier run (its quarantine.jsonl has them) and still in the input
            "quarantined_earlier": self.quarantined_earlier,
            "removed": {"conversations": self.removed, "files": self.removed_files,
                        "outputs_deleted": self.removed_outputs_deleted},
            "statuses": {s: self.statuses.get(s, 0) for s in ("compacted", "unchanged", "quarantined", "failed")},
            "triggers": dict(self.triggers),
            "fallbacks": self.fallbacks,
            "split_merged": self.split_merged,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "token_ratio": round(self.tokens_after / self.tokens_before, 4) if self.tokens_before else None,
            "over_context": self.over_context,
            "summary_tokens": self.summary_tokens,
            "summarizer_calls": self.calls,
            "summarizer_retries": self.retries,
            "summarizer_usage": usage,
            "summarizer_batch_items": self.batch_items,
            "summarizer_usage_batch": usage_batch,      # within summarizer_usage, billed at the batch price
            "summary_via": dict(self.via),
            "estimated_cost_usd": {
                # what the summary calls cost (batch items at half price), and what sending each
                # transcript once more would cost
                "summarizer": round(bill(usage) - (1 - BATCH_PRICE) * bill(usage_batch), 6),
                "next_request_input_before": per_million(self.tokens_before, prices.get("input", 0)),
                "next_request_input_after": per_million(self.tokens_after, prices.get("input", 0)),
            },
            "prompt_caching": caching_line,
            "quality": self.quality.to_dict(),  # what the compacted conversations still name, added up
            "replay": self.replay.to_dict(),   # the live agent's bill under these settings, added up
            "files": self.files,
            "bytes_in": self.bytes_in,
            "bytes_skipped": self.bytes_skipped,
            "bytes_out": self.bytes_out,
            "wall_seconds": round(wall_seconds, 3),
            # CPU of this process alone: with worker processes or Dask, what reading and recording cost
            "process_cpu_seconds": round(own_cpu_seconds(), 3),
            "mb_per_second": round(self.bytes_in / 1e6 / wall_seconds, 3) if wall_seconds > 0 else None,
            "conversations_per_second": round(conversations / wall_seconds, 2) if wall_seconds > 0 else None,
            "stopped": self.stopped,
            # {stage: {counter: total, "seconds": CPU}}: the stages, and the run's own parts around them
            "stages": self.stages.to_dict(),
        }


class StageTotals:
    """Each stage's counts and CPU seconds added up over the rows (their `<stage>.<counter>` columns), and
    the parts of the run no row sees (start-up, reading, recording), so that their seconds add up to the
    run's CPU time."""

    FIRST = ("start", "read", "parse", "plan")       # the order of summary.json's entries: the way a record goes
    LAST = ("write", "replay", "record", "finish")

    def __init__(self):
        self.entries: dict[str, Counter] = {}

    def add(self, row: dict) -> None:
        for key, value in row.items():
            stage, _, counter = key.partition(".")
            # counters are whole numbers and seconds; a per-conversation share is no total
            if counter and (isinstance(value, int) and not isinstance(value, bool) or counter == "seconds"):
                self.entries.setdefault(stage, Counter())[counter] += value

    def add_seconds(self, part: str, seconds: float) -> None:
        self.entries.setdefault(part, Counter())["seconds"] += seconds

    def to_dict(self) -> dict[str, dict]:
        rank = lambda name: (self.FIRST.index(name) if name in self.FIRST
                             else len(self.FIRST) + 1 + self.LAST.index(name) if name in self.LAST else len(self.FIRST))
        return {name: {k: round(v, 3) if k == "seconds" else v for k, v in self.entries[name].items()}
                for name in sorted(self.entries, key=rank)}


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class QualityTotals:
    """Quality probes added up over the compacted conversations (summary.json `quality`)."""

    KINDS = ("files_written", "files_read", "user_turns", "errors", "errors_open", "identifiers", "open_tasks",
             "commits")

    def __init__(self):
        self.scores: list[float] = []
        self.unprobed = 0          # compacted conversations with nothing to probe: no score, counted apart
        self.kinds = {kind: {"kept": 0, "total": 0} for kind in self.KINDS}

    def add(self, quality: dict | None) -> None:
        if not quality:
            return
        if quality.get("score") is None:
            self.unprobed += 1
        else:
            self.scores.append(quality["score"])
        for kind in self.KINDS:
            for key in ("kept", "total"):
                self.kinds[kind][key] += quality.get(kind, {}).get(key, 0)

    def to_dict(self) -> dict | None:
        if not self.scores and not self.unprobed:
            return None
        # `score`: the mean over the conversations that had probes; `worst_tenth`: the mean of their lowest
        # tenth (at least one); per kind: kept / total over all of them
        worst = sorted(self.scores)[:max(1, len(self.scores) // 10)]
        mean = lambda values: round(sum(values) / len(values), 4) if values else None
        return {"conversations": len(self.scores), "score": mean(self.scores), "worst_tenth": mean(worst),
                "without_probes": self.unprobed,
                **{kind: {**v, "share": round(v["kept"] / v["total"], 4) if v["total"] else None}
                   for kind, v in self.kinds.items()}}


class RunFolder:
    """One run's folder: never one that already holds a run, never appended to."""

    def __init__(self, path: Path):
        if (path / "manifest.jsonl").exists() or (path / "summary.json").exists():
            raise ConfigError(f"run folder {path} already holds a run; give a new hydra.run.dir")
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        (path / INCOMPLETE).write_text(f"this run has not finished: pid {os.getpid()} on {socket.gethostname()}, "
                                       f"started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        self.manifest = JsonlLog(path / "manifest.jsonl")
        self.quarantine = JsonlLog(path / "quarantine.jsonl")

    def quarantine_rejected(self, row: dict, item: Rejected) -> None:
        self.quarantine.write_rejected(row, item)

    def close(self) -> None:
        self.manifest.close()
        self.quarantine.close()

    def write_summary(self, summary: dict) -> None:
        write_summary(self.path, summary)


def write_summary(path: Path, summary: dict) -> None:
    temp = path / ".summary.json.part"
    temp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(temp, path / "summary.json")
    (path / INCOMPLETE).unlink(missing_ok=True)


def _complete_log(path: Path, rows: list[dict]) -> list[dict]:
    """Append to a JSONL log the rows it lacks (by source); a torn last line is cut off first."""
    data = path.read_bytes() if path.exists() else b""
    if data and not data.endswith(b"\n"):
        data = data[:data.rfind(b"\n") + 1]
        path.write_bytes(data)
    present = [json.loads(line) for line in data.splitlines() if line.strip()]
    have = {row.get("source") for row in present}
    missing = [row for row in rows if row.get("source") not in have]
    with open(path, "ab") as handle:
        for row in missing:
            handle.write(json.dumps(row).encode() + b"\n")
    return present + missing


def recover_interrupted(run_dir: Path, committed: list[tuple[dict | None, dict | None]], by: Path) -> int | None:
    """Finish the records of a run that died: its manifest and quarantine get every row it committed,
    and summary.json says it was interrupted. The number of its rows, or None when there was nothing to do."""
    if not run_dir.is_dir() or (run_dir / "summary.json").exists():
        return None
    rows = _complete_log(run_dir / "manifest.jsonl", [m for m, _ in committed if m])
    _complete_log(run_dir / "quarantine.jsonl", [q for _, q in committed if q])
    totals = RunTotals(interrupted=True)
    for row in rows:
        totals.add(row)
    summary = totals.summary(0.0, {}, "")
    killed = f"killed before it could finish; its records were completed by the run in {by}"
    # what only the dead process knew (its files, bytes, prices, time, exit status) is unknown, not zero
    summary.update(stopped=killed, exit_code=None, exit_reason=killed, files=None, bytes_in=None, bytes_skipped=None,
                   bytes_out=None, prompt_caching=None, wall_seconds=None, process_cpu_seconds=None,
                   mb_per_second=None, conversations_per_second=None,
                   estimated_cost_usd={key: None for key in summary["estimated_cost_usd"]})
    write_summary(run_dir, summary)
    with open(run_dir / "cli.log", "a") as log_file:      # its own log says how it ended
        log_file.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][hermes_pipeline.run_log][WARNING] - {killed}\n")
    return len(rows)
