"""Context engines: the ABC the run loop calls, the built-in compressor, plugin resolution."""
from hermes_pipeline.engine.base import (
           Compaction,
           ContextEngine,
           EngineServices,
           Outcome,
           StageTools,
)
from hermes_pipeline.engine.compressor import ContextCompressor
from hermes_pipeline.engine.plugins import register_context_engine, resolve_engine

__all__ = ["Compaction", "ContextCompressor", "ContextEngine", "EngineServices", "Outcome", "StageTools",
           "register_context_engine", "resolve_engine"]
