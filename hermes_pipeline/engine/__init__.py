"""Context engines: the built-in compressor, and plugins registered by name."""
from __future__ import annotations

import logging
from typing import Callable

from hermes_pipeline.engine.base import ContextEngine
from hermes_pipeline.engine.compressor import CompactionOutcome, ContextCompressor

log = logging.getLogger(__name__)
_REGISTRY: dict[str, Callable[..., ContextEngine]] = {}


def register_context_engine(name: str, factory: Callable[..., ContextEngine]) -> None:
    _REGISTRY[name] = factory


def resolve_engine_factory(name: str) -> Callable[..., ContextEngine]:
    """A registered plugin by name; otherwise the built-in compressor (and say so)."""
    if name == ContextCompressor.name:
        return ContextCompressor
    if name in _REGISTRY:
        return _REGISTRY[name]
    log.warning("context engine %r not found; using the built-in compressor", name)
    return ContextCompressor


__all__ = ["CompactionOutcome", "ContextCompressor", "ContextEngine", "register_context_engine",
           "resolve_engine_factory"]
