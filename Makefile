# harvest — every target bootstraps what it needs (venv, PyPI packages, jars, Kafka).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CACHE := .cache
JARS := $(CACHE)/jars
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help venv jars jars-lock native registry kafka-up kafka-down test test-unit test-all lint typecheck demo bench bench-quick spark-cluster-up spark-cluster-down clean

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}'

$(BIN)/.stamp: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

venv: $(BIN)/.stamp ## Create .venv and install the package with dev extras

# `harvest setup`: the jars of connectors/launch/jars.lock.json from Maven Central (or the
# local Maven repository), SHA-256 checked; no Maven needed
$(JARS)/.stamp: connectors/launch/jars.lock.json $(BIN)/.stamp
	$(BIN)/harvest setup
	@touch $@

jars: $(JARS)/.stamp ## Fetch the Kafka broker + Spark connector jars (`harvest setup`; cached)

jars-lock: ## Rewrite connectors/launch/jars.lock.json from infra/maven/pom.xml (needs Maven)
	$(PYTHON) infra/maven/write_lock.py

# jemalloc for the Spark JVM (bounded native memory, docs/NOTES.md "soak"): Debian's
# libjemalloc2 unpacked into the cache, no root needed; without it the JVM uses glibc
$(CACHE)/lib/libjemalloc.so.2:
	@mkdir -p $(CACHE)/lib $(CACHE)/deb
	@if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
	  && (cd $(CACHE)/deb && apt-get download -q libjemalloc2 >/dev/null 2>&1) \
	  && dpkg-deb -x $$(ls -t $(CACHE)/deb/libjemalloc2_*.deb | head -1) $(CACHE)/deb/root \
	  && cp $$(find $(CACHE)/deb/root -name libjemalloc.so.2 | head -1) $@; then \
	  echo "native: jemalloc in $@"; \
	else echo "warning: could not fetch Debian's libjemalloc2; the Spark JVM uses glibc malloc" >&2; fi

native: $(CACHE)/lib/libjemalloc.so.2 ## Fetch jemalloc for the Spark JVM (optional; Debian's libjemalloc2)

# Apicurio Registry for the avro-confluent format (the local Schema Registry, Java 21+):
# downloaded from Maven Central and SHA-256 checked by connectors/launch/registry_dist.py
registry: venv ## Fetch the local Schema Registry (Apicurio, from Maven Central; cached)
	$(BIN)/python -c "from connectors.launch.registry_dist import fetch_distribution; \
	from pipeline.core.settings import load_settings; \
	print('registry:', fetch_distribution(load_settings().registry_dir))"

kafka-up: venv jars ## Start the local single-node KRaft broker
	$(BIN)/harvest kafka up

kafka-down: venv ## Stop the local broker
	$(BIN)/harvest kafka down

test: venv jars native registry ## Run the import-layer contract, then the whole test suite (starts the local broker if needed)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-unit: venv ## Run the unit and contract tests (no broker, no Spark)
	$(BIN)/python -m pytest tests/unit tests/contract $(PYTEST_ARGS)

lint: venv ## ruff check + the import-layer contract (lint-imports)
	$(BIN)/ruff check pipeline connectors tests bench
	$(BIN)/lint-imports

typecheck: venv ## mypy
	$(BIN)/mypy pipeline connectors

demo: venv jars native ## Run the end-to-end demo (broker, producers, Spark job, consumer, oracle)
	$(BIN)/harvest demo

bench: venv jars native ## Run every benchmark (writes bench/results/*.json + *.png)
	$(BIN)/harvest bench all

bench-quick: venv jars native ## Run every benchmark in quick mode
	$(BIN)/harvest bench all --quick

spark-cluster-up: venv jars ## Start a Spark standalone master + worker on 127.0.0.1
	$(BIN)/harvest spark-cluster up

spark-cluster-down: venv ## Stop the standalone master + worker
	$(BIN)/harvest spark-cluster down

clean: ## Remove the venv and caches (keeps bench/results)
	-$(BIN)/harvest kafka down 2>/dev/null
	rm -rf $(VENV) $(CACHE) .pytest_cache .mypy_cache .ruff_cache .hypothesis
