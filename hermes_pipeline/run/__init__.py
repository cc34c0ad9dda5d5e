"""The run: its loop over the inputs, the runners, the run folder, the output tree and its incremental state."""
