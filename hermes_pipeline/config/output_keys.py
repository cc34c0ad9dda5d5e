"""Which config keys change what a run writes, from the schema's `output` marks.

Each schema field says whether it can change the output bytes (`output=True`) or only
where things are, how fast and how loud (`output=False`); a field without a mark of its
own takes its parent's. The `summarizer` and `runner` nodes are classified by the schema
of their `_target_`. The incremental fingerprint (state.config_fingerprint) leaves out
what `runtime_keys` names, so a nightly run recompacts only when an output key changed.
"""
from __future__ import annotations

from typing import Any, Iterator

from hermes_pipeline.config.schema import TARGET_SCHEMAS, HermesConfig
from hermes_pipeline.config.validate import GROUP_NODES, field_schema, schema_fields


def classified_keys(schema: type = HermesConfig, prefix: str = "",
                    inherited: bool | None = None) -> Iterator[tuple[str, bool | None]]:
    """(dotted key, its mark) of every leaf of a schema: True changes the output, False does not,
    None is not classified (a group node classified by its target's schema)."""
    for name, f in schema_fields(schema).items():
        mark = f.metadata.get("output")
        mark = inherited if mark is None else mark
        inner = field_schema(f)
        if inner is not None:
            yield from classified_keys(inner, f"{prefix}{name}.", mark)
        else:
            yield f"{prefix}{name}", mark


def target_schema_marks() -> dict[str, bool | None]:
    """The mark each group node (summarizer, runner) gives the keys of its targets' schemas."""
    return {name: HermesConfig.__dataclass_fields__[name].metadata.get("output") for name in GROUP_NODES}


def runtime_keys(cfg: Any) -> list[str]:
    """Dotted keys of a composed config that cannot change the output: each the outermost such node."""
    keys = list(_runtime_nodes(HermesConfig, ""))
    for node, mark in target_schema_marks().items():
        target = str(cfg.get(node, {}).get("_target_", "")) if mark is None else ""
        if target in TARGET_SCHEMAS:   # a plugin's own target: all its options count
            keys += _runtime_nodes(TARGET_SCHEMAS[target], f"{node}.")
    return keys


def _runtime_nodes(schema: type, prefix: str) -> Iterator[str]:
    for name, f in schema_fields(schema).items():
        mark, inner = f.metadata.get("output"), field_schema(f)
        if mark is False:
            yield f"{prefix}{name}"
        elif inner is not None:
            yield from _runtime_nodes(inner, f"{prefix}{name}.")
        else:         # a free node of options, some of which only say where things are
            yield from (f"{prefix}{name}.{key}" for key in f.metadata.get("runtime_options", ()))
