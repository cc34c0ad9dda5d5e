"""Which engine `context.engine` names (SPEC §1); plugins are never activated on their own.

Resolution order:
  1. `plugins/context_engine/<name>/__init__.py` under the working directory, then
     under each of `plugins.dirs`: its `register(ctx)` calls
     `ctx.register_context_engine(name, factory)`, or it defines one
     `ContextEngine` subclass, which is the factory;
  2. the entry-point group `hermes_pipeline.context_engines`, then the
     in-process registry (`register_context_engine`);
  3. otherwise the built-in compressor, with a warning, and the manifest's
     `engine_fallback` says why.
A factory is called as `factory(services, **options)`.
"""
from __future__ import annotations

import difflib
import importlib.util
import inspect
import logging
import re
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable

from hermes_pipeline.config import ConfigError
from hermes_pipeline.engine.base import ContextEngine
from hermes_pipeline.engine.compressor import ContextCompressor

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "hermes_pipeline.context_engines"
BUILT_IN = {"compressor": ContextCompressor}
_REGISTRY: dict[str, Callable[..., ContextEngine]] = {}
_VALID_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")


def register_context_engine(name: str, factory: Callable[..., ContextEngine]) -> None:
    """Make an engine known by name in this process."""
    check_name(name)
    _REGISTRY[name] = factory


def check_name(name: str) -> None:
    """Names are plain words: no path separators, dots or NUL (a name becomes a folder name)."""
    if not isinstance(name, str) or not _VALID_NAME.match(name):
        raise ConfigError(f"context.engine={name!r} is not a valid engine name: use letters, digits, '_' or '-' "
                          "(no '.', '/', '\\\\' or NUL)")


@dataclass(frozen=True)
class Resolved:
    factory: Callable[..., ContextEngine]
    name: str                      # the engine that will run
    origin: str                    # "built-in" | "directory <path>" | "entry point <value>" | "registry"
    fallback: str | None = None    # why the requested engine is not the one that runs


class _PluginContext:
    """What a directory plugin's register(ctx) receives."""

    def __init__(self):
        self.engines: dict[str, Callable[..., ContextEngine]] = {}

    def register_context_engine(self, name: str, factory: Callable[..., ContextEngine]) -> None:
        check_name(name)
        self.engines[name] = factory


def _plugin_folder(root: Path, name: str) -> Path | None:
    base = (root / "plugins" / "context_engine").resolve()
    folder = base / name
    if not (folder / "__init__.py").is_file():
        return None
    # a symlink (of the folder or of its __init__.py) that leaves the plugin folder is not a plugin here
    for path in (folder, folder / "__init__.py"):
        if not path.resolve().is_relative_to(base):
            raise ConfigError(f"plugin {root / 'plugins' / 'context_engine' / path.relative_to(base)} points "
                              f"outside {base}: refused")
    return folder


def _defined_in(cls: type, module_name: str) -> bool:
    """The class comes from the plugin: its __init__.py or a module inside its folder."""
    return cls.__module__ == module_name or cls.__module__.startswith(module_name + ".")


def _load_directory_plugin(folder: Path, name: str) -> Callable[..., ContextEngine]:
    module_name = f"hermes_pipeline_plugin_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module   # before running it, so its relative imports resolve
    try:
        spec.loader.exec_module(module)
    except Exception as error:          # a broken plugin is a config error, not a traceback
        sys.modules.pop(module_name, None)
        raise ConfigError(f"plugin {folder} failed to load: {type(error).__name__}: {error}") from None
    if callable(getattr(module, "register", None)):
        ctx = _PluginContext()
        try:
            module.register(ctx)
        except ConfigError:
            raise
        except Exception as error:
            raise ConfigError(f"plugin {folder}: register(ctx) failed: {type(error).__name__}: {error}") from None
        if name in ctx.engines:
            return ctx.engines[name]
        raise ConfigError(f"plugin {folder}: register(ctx) did not register an engine named {name!r}")
    classes = [value for value in vars(module).values() if inspect.isclass(value)
               and issubclass(value, ContextEngine) and value is not ContextEngine
               and _defined_in(value, module_name) and not inspect.isabstract(value)]
    if len(classes) != 1:
        raise ConfigError(f"plugin {folder}: define register(ctx) or exactly one ContextEngine subclass "
                          f"(found {len(classes)})")
    return classes[0]


def resolve_engine(name: str, search_dirs: list[Path]) -> Resolved:
    check_name(name)
    if name in BUILT_IN:
        return Resolved(BUILT_IN[name], name, "built-in")
    for root in search_dirs:
        folder = _plugin_folder(Path(root), name)
        if folder is not None:
            return Resolved(_load_directory_plugin(folder, name), name, f"directory {folder}")
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            try:
                factory = entry.load()
            except Exception as error:   # an installed but broken plugin: say which, don't crash
                raise ConfigError(f"context engine {name!r} (entry point {entry.value}) failed to load: "
                                  f"{type(error).__name__}: {error}") from None
            return Resolved(factory, name, f"entry point {entry.value}")
    if name in _REGISTRY:
        return Resolved(_REGISTRY[name], name, "registry")
    known = [*BUILT_IN, *(e.name for e in entry_points(group=ENTRY_POINT_GROUP)), *_REGISTRY]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    why = (f"context engine {name!r} not found (no plugins/context_engine/{name}/ under "
           f"{', '.join(str(d) for d in search_dirs)}, no entry point in {ENTRY_POINT_GROUP}, not registered"
           f"{f'; did you mean {close[0]}?' if close else ''}); using the built-in compressor")
    log.warning(why)
    return Resolved(ContextCompressor, ContextCompressor.name, "built-in", why)
