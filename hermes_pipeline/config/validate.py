"""Checks of the composed config against the schema: unknown keys, ranges, choices.

Every message names the key and what is allowed; an unknown key (a typo,
with Hydra's `+` or without) names the closest valid key.
"""
from __future__ import annotations

import dataclasses
import difflib
import re
from typing import Any, Iterator

from omegaconf import DictConfig, ListConfig, OmegaConf

from hermes_pipeline.config.schema import TARGET_SCHEMAS, HermesConfig

GROUP_NODES = ("summarizer", "runner")          # options depend on the chosen _target_
FREE_NODES = ("context.options", "pipeline")    # shaped by the engine or stage list, not by the schema
GROUPS = ("model", "summarizer", "engine", "pipeline", "runner")


class ConfigError(ValueError):
    pass


def _is_schema(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def schema_fields(schema: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(schema)}


def field_schema(f: dataclasses.Field) -> Any:
    """The dataclass a field holds, or None for a leaf."""
    kind = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
    return type(kind) if kind is not None and dataclasses.is_dataclass(kind) else None


def leaf_keys(schema: type, prefix: str = "") -> Iterator[tuple[str, dataclasses.Field]]:
    """(dotted key, field) of every leaf of a schema."""
    for name, f in schema_fields(schema).items():
        inner = field_schema(f)
        if inner is not None:
            yield from leaf_keys(inner, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", f


def known_keys() -> list[str]:
    keys = [k for k, _ in leaf_keys(HermesConfig)]
    for target, schema in TARGET_SCHEMAS.items():
        node = "summarizer" if ".summarizers." in target else "runner"
        keys += [f"{node}.{k}" for k, _ in leaf_keys(schema)]
    return sorted(set(keys))


def unknown_key_error(key: str) -> ConfigError:
    keys = known_keys()
    endings = [k for k in keys if k.endswith("." + key)] if "." not in key else []
    if endings:      # `threshold=` : every key of that name, each under its own section
        more = f" (or {', '.join(endings[1:])})" if len(endings) > 1 else ""
        return ConfigError(f"unknown config key {key!r}; did you mean {endings[0]}{more}?")
    # the names one gives alone too: config groups and short forms (`input=...` is input.path)
    nodes = sorted({k.split(".")[0] for k in keys} | set(GROUPS)) if "." not in key else []
    close = difflib.get_close_matches(key, nodes + keys, n=1, cutoff=0.6)
    if not close:   # a typo in the last part only: compare within the same parent
        parent, _, last = key.rpartition(".")
        siblings = [k for k in known_keys() if k.rpartition(".")[0] == parent]
        close = difflib.get_close_matches(key, siblings, n=1, cutoff=0.0) if parent and siblings else []
    hint = f"; did you mean {close[0]}?" if close else "; see `hermes-pipeline --help` for every key"
    return ConfigError(f"unknown config key {key!r}{hint}")


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_value(key: str, value: Any, f: dataclasses.Field) -> None:
    meta = f.metadata
    if meta.get("fixed") and value != f.default:
        raise ConfigError(f"{key}={value!r} is fixed by the design: must be {f.default}")
    choices = meta.get("choices")
    # compare types too: 1 == True in Python, but `enabled: 1` is not `true`
    if choices and not any(value == c and type(value) is type(c) for c in choices):
        raise ConfigError(f"{key}={value!r} is not allowed: must be one of {', '.join(map(_shown, choices))}")
    low_high = meta.get("range")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if low_high and not (number and low_high[0] <= value <= low_high[1]):
        raise ConfigError(f"{key}={value!r} is out of range: must be a number in [{low_high[0]}, {low_high[1]}]")
    minimum = meta.get("minimum")
    if minimum is not None and value is not None and not (key.endswith("concurrency") and value == "auto"):
        if not number or value < minimum:
            kind = "an integer" if f.type in ("int", int) else "a number"
            raise ConfigError(f"{key}={value!r} is out of range: must be {kind} >= {minimum}")


def check_node(node: Any, schema: type, prefix: str) -> None:
    if not isinstance(node, DictConfig):
        raise ConfigError(f"{prefix.rstrip('.')} must be a mapping of keys")
    fields = schema_fields(schema)
    for key in node.keys():
        if key not in fields and key != "_target_":
            raise unknown_key_error(f"{prefix}{key}")
    for name, f in fields.items():
        if name not in node or f"{prefix}{name}" in FREE_NODES + GROUP_NODES:
            continue
        inner = field_schema(f)
        if inner is not None:
            check_node(node[name], inner, f"{prefix}{name}.")
        elif not OmegaConf.is_missing(node, name):
            check_value(f"{prefix}{name}", node[name], f)


def validate(cfg: DictConfig) -> None:
    """Every key known and in range, or a ConfigError naming it."""
    check_node(cfg, HermesConfig, "")
    for name in GROUP_NODES:
        node = cfg.get(name)
        schema = TARGET_SCHEMAS.get(str(node.get("_target_"))) if isinstance(node, DictConfig) else None
        if schema is not None:      # a plugin's own target: instantiate() checks its arguments
            check_node(node, schema, f"{name}.")
    stages = OmegaConf.select(cfg, "pipeline.stages")
    if not isinstance(stages, ListConfig) or not all(isinstance(s, DictConfig) and "_target_" in s for s in stages):
        raise ConfigError("pipeline.stages must be a list of stages, each with a _target_")
    if not cfg.input.path and not cfg.input.paths:
        raise ConfigError("input is required: pass input=FILE, input=DIR, input='GLOB' or input.paths=[A,B]")
    for key in ("model.name", "model.provider", "model.context_length"):
        if OmegaConf.select(cfg, key, default=None, throw_on_missing=False) is None:
            raise ConfigError(f"{key} is required (pick a model with model=NAME)")


_PLAIN_VALUES = re.compile(r"[\w.+-]+(?:,[\w.+-]+)*")    # a value, or a sweep's list of them; no ${...} or choice()
_NUMBER_CHECKS = {"int": (re.compile(r"[+-]?\d+"), "an integer"),
                  "float": (re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"), "a number")}


def check_override_value(key: str, value: str, f: dataclasses.Field | None, sweep: bool = False) -> None:
    """A group option that does not exist, or a number that is not one, said in our words before Hydra's."""
    if key == "input.path" and (value.startswith("[") or ("," in value and not sweep)):
        raise ConfigError(f"input={value!r}: one input is one file, folder or glob; several are "
                          "input.paths=[A,B] (or input=[A,B])")
    if any(mark in value for mark in ("${", "(", "[", "{")):
        return         # interpolations, sweep functions, lists: Hydra's own grammar
    if f is not None and f.type in _NUMBER_CHECKS and "," in value and not sweep:
        raise ConfigError(f"{key}={value!r}: a list of values is a sweep (hermes-pipeline -m ...); "
                          "a number is written without separators (16000)")
    if key in GROUPS and _PLAIN_VALUES.fullmatch(value):
        from hermes_pipeline.config.files import group_options
        options = group_options(key)
        for part in value.split(","):
            if options and part not in options:
                close = difflib.get_close_matches(part, options, n=1, cutoff=0.8)
                hint = f"; did you mean {close[0]}?" if close else ""
                raise ConfigError(f"{key}={part!r} is no option of {key}: one of {', '.join(options)}{hint}")
    elif f is not None and f.type in _NUMBER_CHECKS:
        pattern, kind = _NUMBER_CHECKS[f.type]
        for part in value.split(","):
            if not pattern.fullmatch(part) and part not in ("null", "None"):
                raise ConfigError(f"{key}={part!r} is not {kind}" + (" (write 16000, not 16k)" if kind == "an integer"
                                                                     and part[:-1].isdigit() else ""))


def check_override_keys(overrides: list[str]) -> None:
    """Refuse a command-line key the schema doesn't know, or a value it can't take, before Hydra composes
    anything."""
    fields = dict(leaf_keys(HermesConfig))
    # config folders of one's own may hold more group options than ours
    own_configs = any(o.startswith(("--config-dir", "-cd", "--config-path", "-cp", "hydra.searchpath",
                                    "+hydra.searchpath")) for o in overrides)
    sweep = any(o in ("-m", "--multirun") or o.startswith(("hydra.mode=MULTIRUN", "+hydra.mode=MULTIRUN"))
                for o in overrides)
    for override in overrides:
        if "=" in override and not override.startswith(("-", "~")):
            key, value = override.split("=", 1)
            key = key.lstrip("+")
            if not (own_configs and key in GROUPS):
                check_override_value(key, value, fields.get(key), sweep)
    keys = set(known_keys())
    prefixes = {k.rsplit(".", i)[0] for k in keys for i in range(k.count(".") + 1)}
    for override in overrides:
        if "=" not in override or override.startswith("-"):
            continue
        key = override.split("=", 1)[0].lstrip("+~")
        if not key or key.startswith("hydra") or "/" in key or "@" in key or key in GROUPS:
            continue
        if any(key == free or key.startswith(free + ".") for free in FREE_NODES):
            continue
        if key in keys or key in prefixes:
            continue
        if key.split(".")[0] in GROUP_NODES and "_target_" in key:
            continue
        raise unknown_key_error(key)
