# hermes-pipeline: `make run` compacts the bundled samples, `make test` runs the suite.
# Both create .venv and install the project into it when needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The samples are short: a small context makes most of them compact, to show the effect.
RUN_ARGS ?= model.context_length=8000
PYTEST_ARGS ?=

.PHONY: venv run test bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

venv: $(STAMP)

run: venv
	$(BIN)/hermes-pipeline input=samples $(RUN_ARGS)

test: venv
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

bench: venv
	$(BIN)/python -m benchmarks.run_all
	$(BIN)/python -m benchmarks.bench_replay
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider anthropic
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider openai
	$(BIN)/python -m benchmarks.bench_cli_llm

clean:
	rm -rf $(VENV) build *.egg-info
