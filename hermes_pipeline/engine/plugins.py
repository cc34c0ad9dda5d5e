"""Which engine `context.engine` names; plugins are never activated on their own.

Resolution order:
  1. `plugins/context_engine/<name>/__init__.py` under the working directory, then
     under each of `plugins.dirs` (or, Hermes' user-plugin layout, `plugins/<name>/`
     with a `plugin.yaml`): its `register(ctx)` calls
     `ctx.register_context_engine(name, factory)`, or, as a plugin written for the
     Hermes agent does, `ctx.register_context_engine(engine)` with an instance of
     Hermes' ContextEngine; or it defines one `ContextEngine` subclass (ours, or
     Hermes': then it is made without arguments, as Hermes does);
  2. the entry-point group `hermes_pipeline.context_engines`, then the
     in-process registry (`register_context_engine`);
  3. otherwise the built-in compressor, with a warning, and the manifest's
     `engine_fallback` says why.
A factory is called as `factory(services, **options)`; an engine written for Hermes
is run through engine/hermes_abi.py; `engine=hermes` is Hermes' own compressor
(engine/hermes.py).
"""
from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hermes_pipeline.config import ConfigError
from hermes_pipeline.engine.base import ContextEngine
from hermes_pipeline.engine.compressor import ContextCompressor

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "hermes_pipeline.context_engines"


def hermes_compressor(services, **options) -> ContextEngine:
    """engine=hermes (engine/hermes.py), imported when it is chosen: it brings tenacity and the Hermes shims."""
    from hermes_pipeline.engine.hermes import hermes_compressor as make
    return make(services, **options)


BUILT_IN = {"compressor": ContextCompressor, "hermes": hermes_compressor}
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
    """What a directory plugin's register(ctx) receives: our `register_context_engine(name, factory)`,
    or Hermes' `register_context_engine(engine)`; Hermes' other registrations (tools, commands,
    hooks...) are for a live agent, and are ignored here."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.engines: dict[str, Callable[..., ContextEngine]] = {}
        self.hermes_engines: list = []

    def register_context_engine(self, name=None, factory: Callable[..., ContextEngine] | None = None,
                                engine=None) -> None:
        if factory is None:      # Hermes' call: one engine instance
            from hermes_pipeline.engine.hermes_abi import written_for_hermes
            engine = name if engine is None else engine
            if not written_for_hermes(engine):
                raise ConfigError(f"plugin {self.folder}: register_context_engine(engine) takes an instance of "
                                  f"Hermes' agent.context_engine.ContextEngine, not {type(engine).__name__}")
            self.hermes_engines.append(engine)
            return
        check_name(name)
        self.engines[name] = factory

    def __getattr__(self, name: str):
        if name.startswith("register_"):
            return lambda *args, **kwargs: log.debug("plugin %s: %s() ignored (not a context engine)",
                                                     self.folder, name)
        raise AttributeError(name)


def _plugin_folder(root: Path, name: str) -> Path | None:
    """plugins/context_engine/<name>/, else a Hermes user plugin plugins/<name>/ (it has a plugin.yaml)."""
    for parts, marker in ((("plugins", "context_engine"), "__init__.py"), (("plugins",), "plugin.yaml")):
        base = root.joinpath(*parts).resolve()
        folder = base / name
        if not ((folder / "__init__.py").is_file() and (folder / marker).is_file()):
            continue
        # a symlink (of the folder or of its __init__.py) that leaves the plugin folder is not a plugin here
        for path in (folder, folder / "__init__.py"):
            if not path.resolve().is_relative_to(base):
                raise ConfigError(f"plugin {root.joinpath(*parts) / path.relative_to(base)} points "
                                  f"outside {base}: refused")
        return folder
    return None


def _defined_in(cls: type, module_name: str) -> bool:
    """The class comes from the plugin: its __init__.py or a module inside its folder."""
    return cls.__module__ == module_name or cls.__module__.startswith(module_name + ".")


def _load_directory_plugin(folder: Path, name: str) -> Callable[..., ContextEngine]:
    from hermes_pipeline.engine.hermes_abi import INSTALL, hermes_factory, written_for_hermes
    module_name = f"hermes_pipeline_plugin_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module   # before running it, so its relative imports resolve
    try:
        spec.loader.exec_module(module)
    except Exception as error:          # a broken plugin is a config error, not a traceback
        sys.modules.pop(module_name, None)
        hint = ""
        if isinstance(error, ModuleNotFoundError) and str(error.name).split(".")[0] == "agent":
            hint = f" (a plugin written for the Hermes agent needs hermes-agent: {INSTALL})"
        raise ConfigError(f"plugin {folder} failed to load: {type(error).__name__}: {error}{hint}") from None
    if callable(getattr(module, "register", None)):
        ctx = _PluginContext(folder)
        try:
            module.register(ctx)
        except ConfigError:
            raise
        except Exception as error:
            raise ConfigError(f"plugin {folder}: register(ctx) failed: {type(error).__name__}: {error}") from None
        if name in ctx.engines:
            return ctx.engines[name]
        if ctx.hermes_engines:       # Hermes takes the engine its folder registers, whatever its name
            return hermes_factory(name, ctx.hermes_engines[0])
        raise ConfigError(f"plugin {folder}: register(ctx) did not register an engine named {name!r}")
    ours = [value for value in vars(module).values() if inspect.isclass(value)
            and issubclass(value, ContextEngine) and value is not ContextEngine
            and _defined_in(value, module_name) and not inspect.isabstract(value)]
    # Hermes' loader also takes a class the folder imports, but not one of hermes-agent's own
    hermes = [value for value in vars(module).values() if written_for_hermes(value)
              and not value.__module__.startswith("agent.")]
    if len(ours) + len(hermes) != 1:
        raise ConfigError(f"plugin {folder}: define register(ctx) or exactly one ContextEngine subclass "
                          f"(found {len(ours) + len(hermes)})")
    return ours[0] if ours else hermes_factory(name, hermes[0])


def resolve_engine(name: str, search_dirs: list[Path]) -> Resolved:
    check_name(name)
    if name in BUILT_IN:
        return Resolved(BUILT_IN[name], name, "built-in")
    import difflib
    from importlib.metadata import entry_points  # ~5 ms: only when a plugin is asked for
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
