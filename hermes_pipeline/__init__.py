"""hermes-pipeline: offline, config-driven compaction of stored LLM-agent transcripts."""

__version__ = "0.1.0"
