"""hermes-pipeline: offline, config-driven compaction of stored LLM-agent transcripts."""

from hermes_pipeline.run import log_text

__version__ = "0.1.0"

log_text.install()
