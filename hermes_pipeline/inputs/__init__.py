"""Input reading: which files a run reads, what each holds (JSON Lines, a JSON array, compressed), repairs."""
