"""Configuration: the schema (one source of defaults, types, ranges, help) and its checks."""
from hermes_pipeline.config.validate import ConfigError, check_override_keys, validate

__all__ = ["ConfigError", "check_override_keys", "validate"]
