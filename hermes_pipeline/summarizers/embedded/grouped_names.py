"""Compact written forms for summary lines: many paths, identifiers and errors in few tokens.

Paths that share a directory are written once with brace expansion
(`/repo/{src/a.c,include/a.h}`), the shell notation every model reads and
the quality score expands back to the full paths. Identifiers are grouped
by what they are (`reservation_id: JG7FMM, LQ940Q`).
"""
from __future__ import annotations

import re

_PLAIN = re.compile(r"[\w.@~+%/-]+")      # a path that can sit inside braces unambiguously
MAX_GROUP = 10                             # paths per line, so the budget can drop whole lines


def _cluster_key(path: str) -> str:
    parts = path.split("/")
    if path.startswith("/"):   # /home/user, /tmp/tmpabc: the prefix then grows to what the group shares
        return "/".join(parts[:3]) if len(parts) > 3 else "/".join(parts[:-1])
    return parts[0] if len(parts) > 1 else ""


def _common_dir(paths: list[str]) -> str:
    split = [p.split("/")[:-1] for p in paths]
    common = split[0]
    for parts in split[1:]:
        n = 0
        while n < min(len(common), len(parts)) and common[n] == parts[n]:
            n += 1
        common = common[:n]
    return "/".join(common)


def grouped_paths(paths: list[str], limit: int = MAX_GROUP) -> list[tuple[str, list[str]]]:
    """(text, the paths it names): each path exactly once, in brace groups of at most `limit` paths."""
    clusters: dict[str, list[str]] = {}
    out = []
    for path in paths:
        if _PLAIN.fullmatch(path):
            clusters.setdefault(_cluster_key(path), []).append(path)
        else:
            out.append((path, [path]))   # spaces or globs: only written out alone
    for members in clusters.values():
        for start in range(0, len(members), limit):
            chunk = members[start:start + limit]
            prefix = _common_dir(chunk) if len(chunk) > 1 else ""
            if not prefix:
                out.append((", ".join(chunk), chunk))
            else:
                out.append((f"{prefix}/{{{','.join(p[len(prefix) + 1:] for p in chunk)}}}", chunk))
    return out


def grouped_identifiers(identifiers: dict[str, str], limit: int = 16) -> list[str]:
    """'what: value, value' lines, one kind at a time, in first-seen order."""
    kinds: dict[str, list[str]] = {}
    for value, kind in identifiers.items():
        kinds.setdefault(kind, []).append(value)
    out = []
    for kind, values in kinds.items():
        for start in range(0, len(values), limit):
            out.append(f"{kind}: {', '.join(values[start:start + limit])}")
    return out
