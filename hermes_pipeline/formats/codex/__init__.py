"""Codex CLI rollouts: read as the history Codex would send next, written back as its own compaction."""
