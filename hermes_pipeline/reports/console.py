"""What the user reads on the terminal: --help, the results table."""
from __future__ import annotations

import dataclasses
import json

from omegaconf import DictConfig, ListConfig, OmegaConf

from hermes_pipeline import __version__
from hermes_pipeline.config.files import config_dir, group_options
from hermes_pipeline.config.schema import TARGET_SCHEMAS, HermesConfig
from hermes_pipeline.config.validate import leaf_keys

INTRO = f"""hermes-pipeline {__version__}: compacts stored LLM-agent conversations (JSONL, JSON, a Hermes
state.db) the way the Hermes agent compacts its live context: each long transcript becomes head +
structured summary + verbatim tail. Inputs are never changed (but a Hermes store given
output.native.store=in_place); each run writes a folder under runs/.

Common commands:
  hermes-pipeline input=path/to/file.jsonl            compact one file (embedded summarizer, no key)
  hermes-pipeline input=archive/                      every transcript below a folder (.jsonl, .json, .ndjson,
                                                      also .gz/.zst; other files by their content)
  hermes-pipeline input=... model.context_length=32000 compression.threshold=0.4
  hermes-pipeline input=... summarizer=anthropic      Claude summaries (ANTHROPIC_API_KEY)
  hermes-pipeline input=... engine=lcm                lossless: removed turns kept in a searchable store
  hermes-pipeline input=... engine=hermes             the Hermes agent's own compressor (the [hermes] extra)
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


def table_rows(summary: dict) -> list[tuple[str, str]]:
    """(measure, value) rows of the results table."""
    rows = [(status, str(n)) for status, n in summary["statuses"].items()]
    rows += [("tokens before", f"{summary['tokens_before']:,}"), ("tokens after", f"{summary['tokens_after']:,}"),
             ("token ratio", "-" if summary["token_ratio"] is None else str(summary["token_ratio"])),
             ("fallbacks", str(summary["fallbacks"]))]
    if "over_context" in summary:     # outputs that could not be fitted within the safety net's share
        rows.append(("over context (fits: false)", str(summary["over_context"])))
    quality = summary.get("quality")
    if quality and quality.get("score") is not None:
        rows.append((f"quality score (mean of {quality['conversations']})", f"{quality['score']:.3f}"))
        rows.append(("quality, worst tenth", f"{quality['worst_tenth']:.3f}"))
        for kind, label in (("files_written", "files changed kept"), ("errors", "last errors kept"),
                            ("errors_open", "open errors kept"), ("open_tasks", "open tasks kept"),
                            ("commits", "commits kept"), ("user_turns", "user turns kept"),
                            ("identifiers", "identifiers kept"), ("files_read", "files read kept")):
            entry = quality.get(kind) or {}
            if entry.get("total"):
                rows.append((label, f"{entry['kept']}/{entry['total']} ({entry['kept'] / entry['total']:.0%})"))
    exam = summary.get("exam")
    if exam:       # the judged exam: questions from the conversation as read, answered from what was written
        score = "-" if exam["score"] is None else f"{exam['score']:.2f} of 5"
        rows.append((f"exam, judged (mean of {exam['examined']})", score))
        for kind, value in (exam.get("per_kind") or {}).items():
            rows.append((f"exam: {kind}", f"{value:.2f}"))
        for name, value in (exam.get("baselines") or {}).items():
            rows.append((f"exam baseline: {name.replace('_', ' + ')}", "-" if value is None else f"{value:.2f}"))
        if exam.get("errors"):
            rows.append(("exam: failed (exam.error)", str(exam["errors"])))
        rows.append(("exam $", f"{exam['cost_usd']:.4f}"))
    if quality and quality.get("without_probes"):
        rows.append(("compacted, nothing to probe", str(quality["without_probes"])))
    if summary.get("skipped_unchanged"):
        rows.append(("skipped unchanged", str(summary["skipped_unchanged"])))
    if summary.get("quarantined_earlier"):
        rows.append(("of which quarantined earlier", str(summary["quarantined_earlier"])))
    removed = summary.get("removed") or {}
    if removed.get("files"):
        fate = "outputs deleted" if removed.get("outputs_deleted") else "outputs kept"
        rows.append((f"inputs gone ({fate})", str(len(removed["files"]))))
    would = summary.get("dry_run")
    if would:      # what a run would do: its summary calls and what they would cost
        rows += [("dry run: LLM calls", f"{would['llm_calls']:,}"),
                 ("dry run: summaries $", f"{would['cost_usd']:.4f}" + (" (batch)" if would["batch"] else ""))]
    rows += [("wall seconds", str(summary["wall_seconds"])), ("MB/s", str(summary["mb_per_second"]))]
    return rows


def render_table(title: str, header: tuple[str, str], rows: list[tuple[str, str]]) -> str:
    """A boxed two-column table, values right-aligned. Drawn here rather than with rich: importing
    rich costs a run about 0.06 s, a sixth of its start-up, for one small table."""
    left = max(len(r[0]) for r in [header, *rows])
    right = max(len(r[1]) for r in [header, *rows])
    width = left + right + 7
    line = lambda a, b, c, fill: f"{a}{fill * (left + 2)}{b}{fill * (right + 2)}{c}"
    row = lambda edge, sep, name, value: f"{edge} {name.ljust(left)} {sep} {value.rjust(right)} {edge}"
    out = [title.center(width).rstrip(), line("┏", "┳", "┓", "━"), row("┃", "┃", *header), line("┡", "╇", "┩", "━")]
    out += [row("│", "│", name, value) for name, value in rows]
    out.append(line("└", "┴", "┘", "─"))
    return "\n".join(out)


def print_table(summary: dict) -> None:
    print(render_table("hermes-pipeline run", ("measure", "value"), table_rows(summary)), flush=True)
