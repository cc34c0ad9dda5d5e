"""What a conversation holds, read from its messages alone: probes, their score, artifacts, tool output."""
