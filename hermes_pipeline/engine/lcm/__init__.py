"""The lcm engine (lossless context management): engine.py compacts, store.py keeps the originals,
cli.py is `hermes-pipeline-lcm`. Resolved like any plugin, through the entry point `lcm`."""
