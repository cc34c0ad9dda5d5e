"""The embedded summarizer: deterministic, offline, the state of the work from what the log proves."""
