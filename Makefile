# Every target sets itself up on a fresh machine: a virtual environment under
# the repo with the project and its dev extra installed. Re-running is cheap:
# pip runs again only when pyproject.toml changes.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.goaicore-installed

.PHONY: run test lint bench clean

# The compiled core (native/: Rust under PyO3, built by maturin) is built wherever
# cargo is found (on PATH or rustup's ~/.cargo/bin); elsewhere goaicore runs in pure
# Python, which writes the same bytes.
CARGO  := $(shell command -v cargo || { test -x "$(HOME)/.cargo/bin/cargo" && echo "$(HOME)/.cargo/bin/cargo"; })
NATIVE := $(VENV)/.goaicore-native-installed
NATIVE_SOURCES := native/Cargo.toml native/Cargo.lock native/pyproject.toml $(wildcard native/src/*.rs)

$(STAMP): pyproject.toml
	@echo "setting up $(VENV) (first run, or pyproject.toml changed) ..."
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@( $(PY) -m pip install --disable-pip-version-check --upgrade pip \
	  && $(PY) -m pip install --disable-pip-version-check -e '.[dev]' ) \
	  > $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

# Without cargo the stamp is not written, so a Rust toolchain installed later is used.
$(NATIVE): $(STAMP) $(NATIVE_SOURCES)
ifneq ($(CARGO),)
	@echo "building the compiled core (native/, Rust) ..."
	@PATH="$(dir $(CARGO)):$$PATH" $(PY) -m pip install --disable-pip-version-check ./native \
	  > $(VENV)/native.log 2>&1 || { cat $(VENV)/native.log; exit 1; }
	@touch $(NATIVE)
else
	@echo "no cargo found: the compiled core is not built, goaicore runs in pure Python"
endif

run: $(NATIVE)
	@$(VENV)/bin/goaicore dev

test: $(NATIVE)
	@$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(VENV)/bin/mypy

bench: $(NATIVE)
	@$(VENV)/bin/goaicore bench

clean:
	rm -rf $(VENV) .goaicore .pytest_cache .mypy_cache .ruff_cache
