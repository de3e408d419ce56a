# The two commands of README.md. Both set everything up from scratch on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint

$(BIN)/engram: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/engram

setup: $(BIN)/engram

demo: setup
	$(BIN)/engram build --vault examples/vault --home .engram
	$(BIN)/engram status --home .engram

lint: setup
	$(BIN)/ruff check .

test: lint
	$(BIN)/python -m pytest -q
