"""What the user reads on the terminal: --help, the results table."""
from __future__ import annotations

import dataclasses
import json

from omegaconf import DictConfig, ListConfig, OmegaConf

from hermes_pipeline import __version__
from hermes_pipeline.config.files import config_dir, group_options
from hermes_pipeline.config.schema import TARGET_SCHEMAS, HermesConfig
from hermes_pipeline.config.validate import leaf_keys

INTRO = f"""hermes-pipeline {__version__}: compacts stored LLM-agent conversations (JSONL) the way the
Hermes agent compacts its live context: each long transcript becomes head + structured
summary + verbatim tail. Inputs are never changed; each run writes a folder under runs/.

Common commands:
  hermes-pipeline input=path/to/file.jsonl            compact one file (embedded summarizer, no key)
  hermes-pipeline input=archive/                      every *.jsonl below a folder
  hermes-pipeline input=... model.context_length=32000 compression.threshold=0.4
  hermes-pipeline input=... summarizer=anthropic      Claude summaries (ANTHROPIC_API_KEY)
  hermes-pipeline input=... engine=lcm                lossless: removed turns kept in a searchable store
  hermes-pipeline -m input=... compression.threshold=0.3,0.5 prompt_caching.cache_ttl=5m,1h   a sweep
  hermes-pipeline --cfg job                           print the composed config
  hermes-pipeline -v input=...                        debug logs (per-request HTTP lines included)
  hermes-pipeline --version | --hydra-help

Exit status: 0 all good, 1 bad config, 2 records quarantined, 3 stopped early or interrupted,
4 summarizer unhealthy (too many fallbacks).
"""


def _shown(value) -> str:
    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _default_text(cfg: DictConfig | None, key: str, field: dataclasses.Field) -> str:
    """The composed value when there is a composed config, else the schema's default."""
    if cfg is not None:
        return _shown(OmegaConf.select(cfg, key, default=None, throw_on_missing=False))
    if field.default_factory is not dataclasses.MISSING:
        return _shown(field.default_factory())
    return _shown(field.default)


def _allowed(field: dataclasses.Field) -> str:
    meta = field.metadata
    if meta.get("range"):
        return f" [{meta['range'][0]}..{meta['range'][1]}]"
    if meta.get("minimum") is not None:
        return f" [>= {meta['minimum']}]"
    return ""


def _lines(schema: type, prefix: str, cfg: DictConfig | None, skip: tuple[str, ...] = ()) -> list[str]:
    out = []
    for key, field in leaf_keys(schema, prefix):
        if key.split(".")[0] in skip:
            continue
        default = _default_text(cfg, key, field)
        out.append(f"  {key} = {default}\n      {field.metadata.get('help', '')}{_allowed(field)}")
    return out


def _group_lines(group: str) -> list[str]:
    """Each key of a group's options once, with each option's value."""
    values: dict[str, dict[str, str]] = {}
    helps: dict[str, dataclasses.Field] = {}
    for option in group_options(group):
        node = OmegaConf.load(config_dir() / group / f"{option}.yaml")
        schema = TARGET_SCHEMAS.get(str(node.get("_target_")))
        if schema is None:
            continue
        for key, field in leaf_keys(schema, f"{group}."):
            value = OmegaConf.select(node, key.split(".", 1)[1], default=None, throw_on_missing=False)
            shown = _shown(value) if value is not None or field.default is None else _default_text(None, key, field)
            values.setdefault(key, {})[option] = shown
            helps[key] = field
    out = []
    for key, by_option in values.items():
        if len(set(by_option.values())) == 1:
            default = f"{next(iter(by_option.values()))}   ({', '.join(by_option)})"
        else:
            default = ", ".join(f"{v} ({o})" for o, v in by_option.items())
        out.append(f"  {key} = {default}\n      {helps[key].metadata.get('help', '')}{_allowed(helps[key])}")
    return out


def help_text(cfg: DictConfig | None) -> str:
    """Every key with its default (as composed) and its meaning, from the schema."""
    parts = [INTRO, "Config groups (pick one with group=NAME):"]
    defaults = {k: v for entry in OmegaConf.load(config_dir() / "config.yaml").defaults
                if isinstance(entry, DictConfig) for k, v in entry.items()}   # conf/config.yaml's choices
    for group in ("model", "summarizer", "engine", "pipeline", "runner"):
        chosen = defaults.get(group, "")
        options = ", ".join(group_options(group))
        parts.append(f"  {group}: {options}" + (f"   (default: {chosen})" if chosen else ""))
    parts += ["", "Settings (key = default, then what it means):"]
    parts += _lines(HermesConfig, "", cfg, skip=("summarizer", "runner", "pipeline"))
    for group in ("summarizer", "runner"):
        parts += ["", f"{group}.* (the options of each {group}=NAME, from conf/{group}/):"]
        parts += _group_lines(group)
    parts += ["", "Overrides are key=value; an unknown key is refused, naming the closest valid one."]
    return "\n".join(parts) + "\n"


def print_table(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title="hermes-pipeline run", show_header=True)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for status, n in summary["statuses"].items():
        table.add_row(status, str(n))
    table.add_row("tokens before", f"{summary['tokens_before']:,}")
    table.add_row("tokens after", f"{summary['tokens_after']:,}")
    table.add_row("token ratio", "-" if summary["token_ratio"] is None else str(summary["token_ratio"]))
    table.add_row("fallbacks", str(summary["fallbacks"]))
    quality = summary.get("quality")
    if quality:
        table.add_row("quality score", f"{quality['score']:.3f}")
        for kind, label in (("files_written", "files changed kept"), ("errors", "last errors kept"),
                            ("user_turns", "user turns kept"), ("identifiers", "identifiers kept"),
                            ("files_read", "files read kept")):
            if quality[kind]["total"]:
                table.add_row(label, f"{quality[kind]['kept']}/{quality[kind]['total']}")
    if summary.get("skipped_unchanged"):
        table.add_row("skipped unchanged", str(summary["skipped_unchanged"]))
    if summary.get("quarantined_earlier"):
        table.add_row("of which quarantined earlier", str(summary["quarantined_earlier"]))
    removed = summary.get("removed") or {}
    if removed.get("files"):
        fate = "outputs deleted" if removed.get("outputs_deleted") else "outputs kept"
        table.add_row(f"inputs gone ({fate})", str(len(removed["files"])))
    table.add_row("wall seconds", str(summary["wall_seconds"]))
    table.add_row("MB/s", str(summary["mb_per_second"]))
    Console(stderr=False).print(table)
