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
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/bench_replay.py
	$(BIN)/python benchmarks/bench_llm_concurrency.py --provider anthropic
	$(BIN)/python benchmarks/bench_llm_concurrency.py --provider openai
	$(BIN)/python benchmarks/bench_cli_llm.py

clean:
	rm -rf $(VENV) build *.egg-info
