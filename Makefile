# hermes-pipeline: `make run` compacts the bundled samples, `make test` runs the suite.
# Both create .venv and install the project into it when needed; `make test` also installs
# the real agents the resume tests load our output in (agents/, pinned, project-local) and the
# dependency wheels the wheel test installs from (.wheelhouse/).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
AGENTS := agents/node_modules/.installed
# The wheel test installs the built wheel into a fresh virtualenv from this folder only (no index):
# the dependencies are fetched and built into wheels once, here, not by every test run.
WHEELS := .wheelhouse
WHEELS_STAMP := $(WHEELS)/.complete
# The samples are short: a small context makes most of them compact, to show the effect.
RUN_ARGS ?= model.context_length=8000
PYTEST_ARGS ?=

.PHONY: venv agents wheels run lint test test-unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,hermes]"
	touch $(STAMP)

venv: $(STAMP)

# Claude Code, pi and Codex from the npm registry, at the versions agents/package-lock.json pins
# (npm ci: exactly those, nothing global, nothing at run time).
$(AGENTS): agents/package.json agents/package-lock.json
	npm ci --prefix agents --no-audit --no-fund --loglevel=error
	touch $(AGENTS)

agents: $(AGENTS)

# The runtime dependencies as wheels, and setuptools to build ours (our own wheel is left out:
# the test builds it fresh from the checkout).
$(WHEELS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip wheel --quiet --disable-pip-version-check -w $(WHEELS) . "setuptools>=77"
	rm -f $(WHEELS)/hermes_pipeline-*.whl
	touch $(WHEELS_STAMP)

wheels: $(WHEELS_STAMP)

run: venv
	$(BIN)/hermes-pipeline input=samples $(RUN_ARGS)

# -rs: the summary lists each skipped test and why (e.g. the shared corpus is not beside the clone).
# --dist loadfile: a file's tests run on one worker, so its module-scoped runs are made once, not per worker.
# -n 3 on a 2-core machine: a third worker runs while the others wait on the fake APIs' latency, polls
# and timeouts (back to back on a 2-core machine: 4 min 5 s against 4 min 53 s, 4 min 56 s against 5 min 12 s).
test: venv agents wheels
	$(BIN)/python -m pytest -n 3 --dist loadfile -rs $(PYTEST_ARGS)

# Ruff over the whole project (conf in pyproject.toml); CI runs it before the tests.
lint: venv
	$(BIN)/ruff check .

# The in-process tests only (tests/unit): what to run while changing the engine; make test runs all.
test-unit: venv
	$(BIN)/python -m pytest -n 2 --dist loadfile -rs tests/unit $(PYTEST_ARGS)

# The LLM summarizer figures first; run_all last: its report (bench-data/bench-report.md) ends the output.
bench: venv
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider anthropic
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider openai
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider anthropic -n 64 --latency 2
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider openai -n 64 --latency 2
	$(BIN)/python -m benchmarks.bench_cli_llm
	$(BIN)/python -m benchmarks.bench_digest
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) build *.egg-info agents/node_modules $(WHEELS)
