"""pi coding agent session logs: read as the branch pi would send next, written back as its own compaction."""
