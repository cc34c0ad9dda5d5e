"""Replay cost model: its time against the compaction of the same sessions, and linear growth.

    .venv/bin/python -m benchmarks.bench_replay [--json out.json]

On the long sessions (shared/long-sessions, or HERMES_LONG_SESSIONS) each
conversation is compacted by the engine built from the default config at
model.context_length=16000, then replayed (as configured, without compression,
without caching) with the per-message counts the engine made, as a run does.
Figures are ratios of times measured here, side by side (machines are noisy):
replay / compaction (target <= 0.5), and replay of a session twice as long /
replay of the session (target <= 2.2).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hermes_pipeline.components import build, replay_settings_from_config
from hermes_pipeline.cost.replay import replay
from hermes_pipeline.formats import detect_format_in
from hermes_pipeline.inputs.jsonl import Record, read_records
from testkit.builders import compose_config
from testkit.env import LONG_SESSIONS as LONG

REPEATS = 9


def best_of(fn, repeats: int = REPEATS) -> float:
    """Least CPU seconds of this process over the repeats: other load on the machine does not count."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return min(times)


def conversations(path: Path):
    items = list(read_records(str(path), 64 << 20))
    values = [i.value for i in items[:50] if isinstance(i, Record)]
    fmt, layout = detect_format_in(values)
    return [c for c in fmt.read(iter(items), str(path), layout) if hasattr(c, "messages")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    files = sorted(LONG.rglob("*.jsonl"))
    if not files:
        sys.exit(f"no long sessions under {LONG} (set HERMES_LONG_SESSIONS)")
    cfg = compose_config("input.path=.", "model.context_length=16000")
    engine, settings = build(cfg).engine, replay_settings_from_config(cfg)
    print(f"{'session':44} {'msgs':>5} {'compact s':>9} {'replay s':>9} {'ratio':>6}  compactions")
    total_compact = total_replay = 0.0
    longest = None
    for path in files:
        for conv in conversations(path):
            compaction = engine.compress(conv)
            compact_s = best_of(lambda: engine.compress(conv))
            replay_s = best_of(lambda: replay(conv.messages, compaction.counts, None, settings))
            result = replay(conv.messages, compaction.counts, None, settings)
            total_compact += compact_s
            total_replay += replay_s
            print(f"{path.name[:44]:44} {len(conv.messages):>5} {compact_s:>9.4f} {replay_s:>9.4f} "
                  f"{replay_s / compact_s:>6.3f}  {result.configured.compactions}")
            if longest is None or len(conv.messages) > len(longest[0]):
                longest = (conv.messages, compaction.counts)
    print(f"replay / compaction, all sessions: {total_replay / total_compact:.3f} (target <= 0.5)")
    figures = {"sessions": len(files), "compact_cpu_s": total_compact, "replay_cpu_s": total_replay,
               "replay_over_compaction": total_replay / total_compact}
    messages, counts = longest
    # twice as long: the same session once more after itself
    double = (messages + messages, counts + counts)
    one = best_of(lambda: replay(messages, counts, None, settings))
    two = best_of(lambda: replay(*double, None, settings))
    work = [replay(m, c, None, settings).configured.work for m, c in ((messages, counts), double)]
    print(f"linear growth: {len(messages)} -> {len(double[0])} messages: replay time x{two / one:.2f} "
          f"(target <= 2.2), messages looked at x{work[1] / work[0]:.2f}")
    figures.update(messages=len(messages), growth_x2=two / one, work_x2=work[1] / work[0])
    for times in (4, 8):
        longer = (messages * times, counts * times)
        seconds = best_of(lambda: replay(*longer, None, settings))
        print(f"               {len(messages)} -> {len(longer[0])} messages: replay time x{seconds / one:.2f} "
              f"(linear: {times})")
        figures[f"growth_x{times}"] = seconds / one
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
