"""Claude Code session logs: read as the conversation Claude Code would send next, written back as its own compaction."""
