# hermes-pipeline: `make run` compacts the bundled samples, `make test` runs the suite.
# Both create .venv and install the project into it when needed; `make test` also installs
# the real agents the resume tests load our output in (agents/, pinned, project-local).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
AGENTS := agents/node_modules/.installed
# The samples are short: a small context makes most of them compact, to show the effect.
RUN_ARGS ?= model.context_length=8000
PYTEST_ARGS ?=

.PHONY: venv agents run test bench clean

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

run: venv
	$(BIN)/hermes-pipeline input=samples $(RUN_ARGS)

# -rs: the summary lists each skipped test and why (e.g. the shared corpus is not beside the clone)
test: venv agents
	$(BIN)/python -m pytest -n 2 -rs $(PYTEST_ARGS)

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
	rm -rf $(VENV) build *.egg-info agents/node_modules
