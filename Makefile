# The README's contract. `make demo` and `make test` work on a fresh machine with only python3.11.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

export MEMORY_HOME   ?= $(CURDIR)/.memory_home
export DAGSTER_HOME  ?= $(CURDIR)/.dagster_home
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LANCEDB_LOG := error

.PHONY: setup demo test test-fast test-ui browser servers lint ui bench clean

setup: $(VENV)/.installed $(DAGSTER_HOME)/dagster.yaml

# torch first, pinned: pip takes the CPU wheel this machine keeps on disk (an unpinned torch in a
# fresh venv resolves to a multi-GB CUDA build). Re-runs only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

# The instance's dagster.yaml, written by `memory-assets dagster-yaml`: one run at a time suits
# 2 cores; never two runs of the same partition, nor (many homes) of the same user, at once (a
# sensor request and a backfill queue instead of racing; the indexer's locks make either safe).
# DAGSTER_STORAGE=postgres writes the PostgreSQL variant (docs/guides/scale.md).
DAGSTER_STORAGE ?= sqlite
$(DAGSTER_HOME)/dagster.yaml: Makefile $(VENV)/.installed memory_assets/defs/instance.py
	$(BIN)/memory-assets dagster-yaml --storage $(DAGSTER_STORAGE) --out $@

demo: setup
	$(BIN)/python -m memory_assets.demo

test: setup lint browser servers
	$(BIN)/dagster definitions validate
	$(BIN)/pytest

# The browser tests alone: the Dagster UI driven as a person uses it, and the dedup report opened
# offline. Screenshots of each step go to ui-screenshots/.
test-ui: setup browser
	$(BIN)/pytest -m ui

# The browser tests drive Debian's chromium-headless-shell (never a downloaded browser: no
# `playwright install`). Installed here when missing and running as root (CI does); otherwise the
# tests skip and say why.
CHROMIUM := /usr/bin/chromium-headless-shell
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell; \
	else \
		echo "$(CHROMIUM) is missing and this is not root: the browser tests will skip (install it with: apt-get install chromium-headless-shell)"; \
	fi

# The scale-out tests start real servers from Debian's packages: PostgreSQL (a throwaway cluster,
# run as an unprivileged user) and Redis (the Celery broker). Installed here when missing and
# running as root (CI does); otherwise those tests skip and say why. moto (S3) comes from PyPI.
servers:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else \
		echo "missing:$$missing, and this is not root: their tests will skip (apt-get install$$missing)"; \
	fi

test-fast: setup
	$(BIN)/pytest -m "not slow"

LINT_PATHS := memory_assets memory_assets_tests $(wildcard benchmarks)

lint: setup
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

ui: setup
	$(BIN)/dagster dev -h 127.0.0.1 -p 3000

# bench_e2e.py reads LoCoMo's locomo10.json, which you download (CC BY-NC 4.0, never committed):
# `make bench LOCOMO=PATH/locomo10.json`; without it (or without the LongMemEval sample) it is skipped.
LOCOMO ?=
LONGMEMEVAL ?= ../shared/data/longmemeval-dev
bench: setup
	$(BIN)/python benchmarks/bench_index.py
	$(BIN)/python benchmarks/bench_dedup.py
	$(BIN)/python benchmarks/bench_sensor.py
	$(BIN)/python benchmarks/bench_extraction.py
	$(BIN)/python benchmarks/bench_write_path.py
	$(BIN)/python benchmarks/bench_retrieval.py
	$(BIN)/python benchmarks/bench_consolidation.py
	$(BIN)/python benchmarks/bench_reconcile.py
	$(BIN)/python benchmarks/bench_accounted.py
	$(BIN)/python benchmarks/bench_server.py
	$(BIN)/python benchmarks/bench_sparse_days.py
	$(BIN)/python benchmarks/bench_table_damage.py
	$(BIN)/python benchmarks/bench_homes.py
	$(BIN)/python benchmarks/bench_upkeep.py
	@if [ -f "$(LOCOMO)" ] && [ -d "$(LONGMEMEVAL)" ]; then $(BIN)/python benchmarks/bench_e2e.py --locomo "$(LOCOMO)" --longmemeval "$(LONGMEMEVAL)"; else echo "bench_e2e.py skipped: it needs LoCoMo's locomo10.json (make bench LOCOMO=PATH; you download it) and the LongMemEval-S dev sample (LONGMEMEVAL=$(LONGMEMEVAL))"; fi

clean:
	rm -rf $(VENV) .memory_home .dagster_home ui-screenshots
