"""Start-up checks of the composed config: every value in range, or a clear error.

Messages name the key and the allowed range, so a bad override fails before
any file is read.
"""
from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf


class ConfigError(ValueError):
    pass


# key -> (kind, allowed) ; kind: "float" closed range, "int" minimum, "bool", "choice"
RULES: dict[str, tuple[str, Any]] = {
    "compression.enabled": ("bool", None),
    "compression.threshold": ("float", (0.0, 1.0)),
    "compression.target_ratio": ("float", (0.10, 0.80)),
    "compression.protect_last_n": ("int", 1),
    "compression.protect_first_n": ("fixed", 3),
    "compression.prune_min_chars": ("int", 0),
    "compression.keep_images": ("int", 0),
    "compression.max_tool_arg_chars": ("int", 100),
    "hygiene.threshold": ("float", (0.0, 1.0)),
    "hygiene.min_messages": ("int", 1),
    "model.context_length": ("int", 1000),
    "prompt_caching.cache_ttl": ("choice", ("5m", "1h")),
    "prompt_caching.enabled": ("choice", ("auto", True, False)),
    "prompt_caching.strategy": ("choice", ("system_and_3",)),
    "input.max_record_bytes": ("int", 1024),
    "runner.concurrency": ("int", 1),
    "runner.processes": ("int", 1),
    "progress": ("choice", ("auto", "bar", "log", "none")),
    "replay.enabled": ("bool", None),
    "replay.turn_gap_s": ("float", (0.0, 86_400.0)),
    "replay.prefix_tokens": ("int", 0),
    "replay.warm_prefix_tokens": ("int", 0),
    "replay.summary_tokens": ("int", 0),
}


def _check(key: str, value: Any, kind: str, allowed: Any) -> None:
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{key}={value!r} must be true or false")
    elif kind == "float":
        low, high = allowed
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ConfigError(f"{key}={value!r} is out of range: must be a number in [{low}, {high}]")
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < allowed:
            raise ConfigError(f"{key}={value!r} is out of range: must be an integer >= {allowed}")
    elif kind == "fixed":
        if value != allowed:
            raise ConfigError(f"{key}={value!r} is fixed by the design: must be {allowed}")
    elif kind == "choice":
        # compare types too: 1 == True in Python, but `enabled: 1` is not `true`
        if not any(value == v and type(value) is type(v) for v in allowed):
            shown = ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in allowed)
            raise ConfigError(f"{key}={value!r} is not allowed: must be one of {shown}")


def validate(cfg: DictConfig) -> None:
    for key, (kind, allowed) in RULES.items():
        value = OmegaConf.select(cfg, key, default=None)
        if key == "runner.concurrency" and value in (None, "auto"):
            continue
        _check(key, value, kind, allowed)
    if not cfg.input.path:
        raise ConfigError("input is required: pass input=FILE, input=DIR or input='GLOB'")
    for key in ("model.name", "model.provider"):
        if not OmegaConf.select(cfg, key):
            raise ConfigError(f"{key} is required (pick a model with model=NAME)")
