# Every target sets itself up on a fresh machine: a virtual environment under
# the repo with the project and its dev extra installed. Re-running is cheap:
# pip runs again only when pyproject.toml changes.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.goaicore-installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	@echo "setting up $(VENV) (first run, or pyproject.toml changed) ..."
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@( $(PY) -m pip install --disable-pip-version-check --upgrade pip \
	  && $(PY) -m pip install --disable-pip-version-check -e '.[dev]' ) \
	  > $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

run: $(STAMP)
	@$(VENV)/bin/goaicore dev

test: $(STAMP)
	@$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(VENV)/bin/mypy

bench: $(STAMP)
	@$(VENV)/bin/goaicore bench

clean:
	rm -rf $(VENV) .goaicore .pytest_cache .mypy_cache .ruff_cache
