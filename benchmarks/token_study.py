"""Token counting study: exact counters compared, estimate errors measured, rates refitted.

    python -m benchmarks.token_study [--synth N] [--fit] [--skip-speed] [--json out.json]

- identity: bpe-openai's counter against tiktoken's encode_ordinary on every
  text the counter sees (message parts) and every string of every line of the
  shared corpus and long sessions, and on N synthetic sessions;
- speed: CPU seconds to count the same texts with each counter, with the cache,
  with the calibrated estimate and with len();
- estimate: error of estimate_message_tokens on conversation totals and on
  messages, against the exact count;
- --fit: refit the estimate's rates (minimax on the relative error of
  conversation totals; needs numpy and scipy, which are not dependencies).

Times are CPU seconds (best of 3): machines here are shared and noisy.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from hermes_pipeline import tokens
from hermes_pipeline.inputs.jsonl import Record, read_records
from hermes_pipeline.tokens import TokenCounter, _parts, encoding, estimate_message_tokens
from testkit.env import SHARED
from testkit.sessions import read_conversations, string_leaves


def load(synth: int) -> tuple[dict[str, list[list[dict]]], list[str]]:
    """Conversations (as message lists) by group, and every string leaf of the shared files."""
    groups: dict[str, list[list[dict]]] = {"corpus": [], "long": [], "synth": []}
    strings: list[str] = []
    for folder, group in (("corpus", "corpus"), ("long-sessions", "long")):
        for path in sorted((SHARED / folder).rglob("*.jsonl")):
            groups[group].extend(c.messages for c in read_conversations(path, repaired=False))
            for item in read_records(str(path), 64 << 20):
                if isinstance(item, Record):
                    string_leaves(item.value, strings)
    if synth:
        from testkit.synth import make_session
        groups["synth"] = [make_session(1000 + i)[0]["messages"] for i in range(synth)]
    return groups, strings


def best_cpu(function, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.process_time()
        function()
        times.append(time.process_time() - started)
    return min(times)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def identity(groups, strings) -> dict:
    reference = encoding().encode_ordinary
    counter = TokenCounter(cache=False)
    sets = {f"{g} message texts": [t for conv in convs for m in conv for t in _parts(m)[0]] for g, convs in groups.items()}
    sets["string leaves of every shared line"] = strings
    found = {}
    for name, texts in sets.items():
        wrong = sum(counter.count_text(t) != len(reference(t)) for t in texts)
        print(f"identity  {name:40s} {len(texts):7d} texts {sum(map(len, texts)):10d} chars  differing: {wrong}")
        found[name] = {"texts": len(texts), "differing": wrong}
    return found


def speed(groups) -> None:
    texts = [t for convs in groups.values() for conv in convs for m in conv for t in _parts(m)[0]]
    chars = sum(map(len, texts))
    reference = encoding().encode_ordinary
    plain = TokenCounter(cache=False)
    runs = {
        "tiktoken encode_ordinary": lambda: [len(reference(t)) for t in texts],
        "tiktoken encode_ordinary_batch(2 threads)":
            lambda: [len(x) for x in encoding().encode_ordinary_batch(texts, num_threads=2)],
        "bpe-openai count": lambda: [plain.count_text(t) for t in texts],
        "bpe-openai count + cache (fresh)": lambda: [c.count_text(t) for c in [TokenCounter()] for t in texts],
        "estimate (calibrated)": lambda: [tokens.estimate_tokens(t) for t in texts],
        "ceiling (utf-8 bytes)": lambda: [tokens.token_ceiling(t) for t in texts],
    }
    base = None
    for name, run in runs.items():
        seconds = best_cpu(run)
        base = base or seconds
        print(f"speed     {name:42s} {seconds:6.3f} s cpu  {chars / seconds / 1e6:7.1f} Mchar/s  x{base / seconds:5.2f}")


def estimate_errors(groups) -> dict:
    """|estimate - exact| / exact of conversation totals per group, and of single messages."""
    counter = TokenCounter()
    message_errors, big_ratios, found = [], [], {}
    for group, convs in groups.items():
        errors = []
        for conv in convs:
            exact = counter.count_messages(conv)
            estimated = [estimate_message_tokens(m) for m in conv]
            errors.append(abs(sum(estimated) - sum(exact)) / sum(exact))
            for e, x in zip(estimated, exact):
                message_errors.append(abs(e - x) / x)
                if x >= 200:
                    big_ratios.append(x / e)
        if errors:
            found[group] = {"conversations": len(errors), "median": statistics.median(errors),
                            "p95": percentile(errors, .95), "max": max(errors)}
            print(f"estimate  {group:6s} {len(errors):4d} conversations: "
                  f"|error| of the total median {statistics.median(errors):.4f} "
                  f"p95 {percentile(errors, .95):.4f} max {max(errors):.4f}")
    print(f"estimate  messages: |error| median {statistics.median(message_errors):.4f} p95 {percentile(message_errors, .95):.4f} "
          f"max {max(message_errors):.4f}; messages >= 200 tokens: exact/estimate in "
          f"[{min(big_ratios):.3f}, {max(big_ratios):.3f}]")
    found["messages"] = {"median": statistics.median(message_errors), "p95": percentile(message_errors, .95),
                         "max": max(message_errors)}
    return found


def fit(groups) -> None:
    """Refit the rates: minimise the largest relative error of a conversation total."""
    import numpy as np
    from scipy.optimize import linprog

    rows, exacts = [], []
    counter = TokenCounter()
    for convs in groups.values():
        for conv in convs:
            features = np.zeros(len(tokens._RATES) + 3)
            fixed = 0.0
            for message in conv:
                texts, extra = _parts(message)
                fixed += extra
                for text in texts:
                    if len(text) < tokens.ESTIMATE_EXACT_BELOW:
                        fixed += counter.count_text(text)
                        continue
                    data = text.encode("utf-8", "surrogatepass")
                    classes, letters = data.translate(tokens._CLASSES), b" " + data.translate(tokens._LETTERS)
                    features += [1.0, *(classes.count(p) for p, _ in tokens._RATES), letters.count(b" a"),
                                 letters.count(b"aaaaaaaa")]
            rows.append((features, fixed))
            exacts.append(sum(counter.count_messages(conv)))
    X = np.array([r[0] for r in rows])
    fixed = np.array([r[1] for r in rows])
    y = np.array(exacts, float)
    k = X.shape[1]
    R, r0 = X / y[:, None], (fixed - y) / y
    A = np.vstack([np.hstack([R, -np.ones((len(y), 1))]), np.hstack([-R, -np.ones((len(y), 1))])])
    result = linprog(np.r_[np.zeros(k), 1.0], A_ub=A, b_ub=np.r_[-r0, r0],
                     bounds=[(-10, 10)] + [(-3, 3)] * (k - 1) + [(0, None)], method="highs")
    names = ["per text", *(p.decode() for p, _ in tokens._RATES), "per word", "per long word"]
    print("fit       largest relative error of a total:", round(result.x[-1], 4))
    for name, weight in zip(names, result.x[:k]):
        print(f"fit       {name!r:14s} {weight:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synth", type=int, default=40, help="synthetic sessions to add (default 40)")
    parser.add_argument("--fit", action="store_true", help="refit the estimate's rates (numpy + scipy)")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--json", type=Path, help="write the identity and estimate figures here")
    args = parser.parse_args()
    groups, strings = load(args.synth)
    figures = {"identity": identity(groups, strings)}
    if not args.skip_speed:
        speed(groups)
    figures["estimate"] = estimate_errors(groups)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if args.fit:
        fit(groups)


if __name__ == "__main__":
    main()
