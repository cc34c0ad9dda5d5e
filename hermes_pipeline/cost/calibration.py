"""Calibrate the replay cost model on real bills: Claude Code logs with per-request usage.

Claude Code writes `message.usage` on every assistant line (`input_tokens`,
`cache_creation_input_tokens`, `cache_read_input_tokens`); one response
spread over several lines shares a `message.id` and is counted once. The
reader in formats/claude_code/reader.py keeps only the chain after the last
compaction; here the whole main log is needed, in file order, with its
compaction points (`isCompactSummary`: the history restarts from the summary)
and model switches (a new model starts with an empty cache). Sub-agent lines
(`isSidechain`) are their own conversations, with their own prompt prefix.

The logs do not hold the system prompt and tool definitions. That fixed
prefix is estimated per conversation from its first recorded request: the
prompt it was billed for (uncached + written + read) minus the messages
before it, counted with cl100k and scaled by the model's `token_scale`.

    python -m hermes_pipeline.cost.calibration [LOG_OR_DIR ...]
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from hermes_pipeline.config.schema import ModelConfig, PromptCachingConfig
from hermes_pipeline.cost.replay import Prices, ReplaySettings, replay
from hermes_pipeline.formats.anthropic import message_to_openai
from hermes_pipeline.formats.claude_code.reader import TALK, _merge
from hermes_pipeline.inputs.jsonl import Record
from hermes_pipeline.tokens import TokenCounter

KINDS = ("uncached", "write", "read")
USAGE_KEYS = {"uncached": "input_tokens", "write": "cache_creation_input_tokens", "read": "cache_read_input_tokens"}


@dataclass
class LoggedConversation:
    name: str
    messages: list[dict]
    timestamps: list[float | None]
    usage: dict[int, dict]                 # assistant message index -> recorded usage
    resets: list[int] = field(default_factory=list)
    cold: list[int] = field(default_factory=list)

    def recorded(self) -> dict[str, int]:
        return {k: sum(int(u.get(USAGE_KEYS[k]) or 0) for u in self.usage.values()) for k in KINDS}


def _seconds(stamp) -> float | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _convert(name: str, path: str, events: list[dict]) -> LoggedConversation | None:
    """Reader's merge (one turn per message.id) and message conversion, plus when and what was billed."""
    records = [Record(path, n, e, 0) for n, e in enumerate(events)]
    first_seen: dict[str, dict] = {}
    for n, e in enumerate(events):
        message = e["message"]
        if e["type"] == "assistant" and isinstance(message.get("usage"), dict) and message.get("id"):
            # the request went out when the line before its first answer line was written
            sent = _seconds(events[n - 1].get("timestamp")) if n else None
            first_seen.setdefault(message["id"], {"time": sent or _seconds(e.get("timestamp")),
                                                  "usage": message["usage"], "model": message.get("model")})
    messages, stamps, usage, resets, cold, model = [], [], {}, [], [], None
    for k, turn in enumerate(_merge(records)):
        if turn.closed:                       # a Claude Code compaction summary
            resets.append(len(messages))
        seen = first_seen.get(turn.message_id) if turn.role == "assistant" else None
        for piece in message_to_openai(turn.message(), k):
            if seen and piece["role"] == "assistant":
                usage[len(messages)] = seen["usage"]
                if model is not None and seen["model"] != model:
                    cold.append(len(messages))   # caches are per model
                model = seen["model"]
            messages.append(piece)
            stamps.append(seen["time"] if seen else None)
    if not usage:
        return None
    return LoggedConversation(name, messages, stamps, usage, resets, cold)


def load_log(path: Path) -> list[LoggedConversation]:
    """The main conversation of a Claude Code log and each sub-agent's, those with recorded usage."""
    events = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") in TALK and isinstance(value.get("message"), dict):
            events.append(value)
    main = [e for e in events if not e.get("isSidechain")]
    side = [e for e in events if e.get("isSidechain")]
    # a sub-agent is the set of sidechain lines that lead back to one root line
    parent = {e.get("uuid"): e.get("parentUuid") for e in side}
    def root(uuid):
        seen = set()
        while parent.get(uuid) in parent and uuid not in seen:
            seen.add(uuid)
            uuid = parent[uuid]
        return uuid
    agents: dict[str, list[dict]] = {}
    for e in side:
        agents.setdefault(root(e.get("uuid")), []).append(e)
    found = [_convert(Path(path).stem, str(path), main)] if main else []
    found += [_convert(f"{Path(path).stem}:agent{k}", str(path), group) for k, group in enumerate(agents.values())]
    return [c for c in found if c is not None]


def log_files(paths) -> list[Path]:
    files = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]
    return files


def prompt_of(usage: dict) -> int:
    return sum(int(usage.get(USAGE_KEYS[k]) or 0) for k in KINDS)


def tokenizer_gap(conversations: list[LoggedConversation], counts: dict[str, list[int]]) -> tuple[int, int]:
    """(recorded prompt growth, cl100k count of the same messages) between consecutive requests."""
    recorded = counted = 0
    for conv in conversations:
        c, requests = counts[conv.name], sorted(conv.usage)
        for a, b in zip(requests, requests[1:]):
            if any(a < r <= b for r in conv.resets):
                continue                          # the history was replaced in between
            recorded += prompt_of(conv.usage[b]) - prompt_of(conv.usage[a])
            counted += sum(c[a:b])
    return recorded, counted


def estimate_prefix(conv: LoggedConversation, counts: list[int], scale: float) -> int:
    """Fixed prefix from the first recorded request: its billed prompt minus the messages before it."""
    first = min(conv.usage)
    return max(0, prompt_of(conv.usage[first]) - round(scale * sum(counts[:first])))


def replay_logged(conv: LoggedConversation, counts: list[int], prices: Prices, scale: float,
                  min_cache_tokens: int, context_length: int, ttl: str = PromptCachingConfig.cache_ttl,
                  warm: bool = True) -> dict[str, int]:
    """Replayed (uncached, write, read) of the requests the log billed, compression off, its own resets.

    warm: the part of the prefix the first request read from the cache (other
    sessions of the same agent had written it) is taken as cached at the start.
    """
    first = conv.usage[min(conv.usage)]
    settings = ReplaySettings(prices=prices, context_length=context_length, compression=False, caching=True,
                              cache_ttl=ttl,
                              prefix_tokens=estimate_prefix(conv, counts, scale), token_scale=scale,
                              warm_prefix_tokens=int(first.get(USAGE_KEYS["read"]) or 0) if warm else 0,
                              min_cache_tokens=min_cache_tokens)
    bill = replay(conv.messages, counts, conv.timestamps, settings, resets=conv.resets, cold=conv.cold,
                  per_request=True).configured
    recorded_at = set(conv.usage)
    sums = dict.fromkeys(KINDS, 0)
    for i, uncached, write, read in bill.per_request:
        if i in recorded_at:                      # compare the requests the log billed
            sums["uncached"] += uncached
            sums["write"] += write
            sums["read"] += read
    return sums


def dollars(tokens: dict[str, int], prices: Prices) -> float:
    return (tokens["uncached"] * prices.input + tokens["write"] * prices.cache_write_5m
            + tokens["read"] * prices.cache_read) / 1e6


def calibrate(paths, model, warm: bool = True) -> dict:
    """Recorded vs replayed input-side bill per session and in total, each kind's ratio, the tokenizer gap,
    replayed with `model`'s prices, token scale, cache minimum and context (a conf/model config)."""
    prices, scale, min_cache_tokens = Prices.of(model.prices), float(model.token_scale), int(model.min_cache_tokens)
    counter = TokenCounter()
    sessions, everything, counts = [], [], {}
    for path in log_files(paths):
        conversations = load_log(path)
        if not conversations:
            continue
        for conv in conversations:
            counts[conv.name] = counter.count_messages(conv.messages)
        recorded, replayed = dict.fromkeys(KINDS, 0), dict.fromkeys(KINDS, 0)
        for conv in conversations:
            for k, v in conv.recorded().items():
                recorded[k] += v
            for k, v in replay_logged(conv, counts[conv.name], prices, scale, min_cache_tokens,
                                         int(model.context_length), warm=warm).items():
                replayed[k] += v
        sessions.append(_row(path.stem, len(conversations), sum(len(c.usage) for c in conversations),
                             recorded, replayed, prices))
        everything += conversations
    total_recorded = {k: sum(s["recorded"][k] for s in sessions) for k in KINDS}
    total_replayed = {k: sum(s["replayed"][k] for s in sessions) for k in KINDS}
    grown, counted = tokenizer_gap(everything, counts)
    return {
        "sessions": sessions,
        "total": _row("total", sum(s["conversations"] for s in sessions), sum(s["requests"] for s in sessions),
                      total_recorded, total_replayed, prices),
        "tokenizer": {"recorded_growth": grown, "cl100k_count": counted,
                      "ratio": round(grown / counted, 4) if counted else None, "token_scale_used": scale},
    }


def _row(name, conversations, requests, recorded, replayed, prices) -> dict:
    ratio = lambda a, b: round(a / b, 4) if b else None
    usd_recorded, usd_replayed = dollars(recorded, prices), dollars(replayed, prices)
    return {"session": name, "conversations": conversations, "requests": requests,
            "recorded": recorded, "replayed": replayed,
            "ratios": {k: ratio(replayed[k], recorded[k]) for k in KINDS},
            "recorded_usd": round(usd_recorded, 4), "replayed_usd": round(usd_replayed, 4),
            "ratio": ratio(usd_replayed, usd_recorded)}


def format_table(report: dict) -> str:
    lines = [f"{'session':42} {'conv':>4} {'req':>4} {'recorded $':>11} {'replayed $':>11} {'ratio':>6} "
             f"{'uncached':>8} {'write':>6} {'read':>6}"]
    for row in [*report["sessions"], report["total"]]:
        r = row["ratios"]
        lines.append(f"{row['session'][:42]:42} {row['conversations']:>4} {row['requests']:>4} "
                     f"{row['recorded_usd']:>11.4f} {row['replayed_usd']:>11.4f} {row['ratio'] or 0:>6.3f} "
                     f"{r['uncached'] or 0:>8.3f} {r['write'] or 0:>6.3f} {r['read'] or 0:>6.3f}")
    total = report["total"]
    lines.append(f"uncached input: recorded {total['recorded']['uncached']:,} tokens, replayed "
                 f"{total['replayed']['uncached']:,} (the few tokens after the last breakpoint)")
    t = report["tokenizer"]
    lines.append(f"tokenizer: recorded prompt growth {t['recorded_growth']:,} vs cl100k {t['cl100k_count']:,} "
                 f"= {t['ratio']} (token_scale used: {t['token_scale_used']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from omegaconf import OmegaConf

    from hermes_pipeline.config.files import PACKAGE_ROOT, model_config
    model = model_config("claude-sonnet-4-5")
    shared = PACKAGE_ROOT.parent.parent / "shared"      # beside a checkout of the repository
    argv = list(argv if argv is not None else sys.argv[1:])
    warm = "--cold" not in argv       # --cold: every conversation starts with an empty cache
    argv = [a for a in argv if a != "--cold"]
    paths = argv or [
        shared / "corpus" / "claude-code-viewer", shared / "corpus" / "claude-reliability",
        shared / "long-sessions" / "vsla-claude-sessions"]
    report = calibrate(paths, OmegaConf.merge(OmegaConf.structured(ModelConfig), model), warm=warm)
    print(format_table(report))


if __name__ == "__main__":
    main()
