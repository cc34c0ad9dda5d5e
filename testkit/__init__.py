"""What the tests and the benchmarks share: where the data is and how the real command line runs (env),
generated sessions (synth, sessions), message builders, validity checks, and the real agents with the
fake APIs they are resumed against. Not part of the product (not in the wheel); test-only helpers stay
in tests/helpers."""
