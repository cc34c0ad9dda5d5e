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

# The LLM summarizer figures first; run_all last: its report (bench-data/bench-report.md) ends the output.
bench: venv
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider anthropic
	$(BIN)/python -m benchmarks.bench_llm_concurrency --provider openai
	$(BIN)/python -m benchmarks.bench_cli_llm
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) build *.egg-info
