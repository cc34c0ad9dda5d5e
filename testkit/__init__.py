"""What the tests and the benchmarks share, and the test-only helpers: where the data is and how the real
command line runs (env), generated sessions (synth, sessions, archives, pi_logs, hermes_store), message
builders, validity and accounting checks, the golden digests, and the real agents resumed against the fake
APIs of hermes_pipeline/testing/. Not part of the product (not in the wheel)."""
