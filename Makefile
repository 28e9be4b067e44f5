# One-command entry points for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test lint typecheck unit demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check scheduler tests bench
	$(BIN)/ruff format --check scheduler tests bench

typecheck: venv
	$(BIN)/mypy scheduler

unit: venv
	$(BIN)/pytest tests

test: lint typecheck unit

demo: venv
	$(BIN)/muster demo

bench: venv
	$(BIN)/python bench/session_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
