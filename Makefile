# Two commands for a newcomer: `make demo` and `make test`. Both create .venv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test fuzz lint docs bench reproduce clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installing is keyed on pyproject.toml so that a changed dependency list reinstalls.
# `pip install pmlkit` is the mathematics only (numpy, scipy, randomgen); each target
# installs the extras it needs: the demo reads the Adult data with pandas (`files`),
# `reproduce` runs the command line and draws figures (`cli`, `plot`), and the tests
# need every extra plus the tools (`test`).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[files]'
	touch $@

$(VENV)/.installed-reproduce: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[cli,plot]'
	touch $@ $(VENV)/.installed

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-reproduce

demo: $(VENV)/.installed
	$(BIN)/python -m pmlkit.demo

# Linters, type checks, the documentation build (warnings are errors) and the tests.
test: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy src
	$(BIN)/sphinx-build -q -E -a -W --keep-going -b html docs docs/_build/html
	$(BIN)/python -m pytest

# Property tests with fresh random examples (make test runs a fixed, derandomized set).
FUZZ_EXAMPLES ?= 500
fuzz: $(VENV)/.installed-test
	PMLKIT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q -x

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy src

docs: $(VENV)/.installed-test
	$(BIN)/sphinx-build -q -E -a -W --keep-going -b html docs docs/_build/html

bench: $(VENV)/.installed-test
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done


reproduce: $(VENV)/.installed-reproduce
	$(BIN)/pmlkit reproduce --all --output figures

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache .mypy_cache docs/_build
