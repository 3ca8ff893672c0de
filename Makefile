# The two commands a newcomer needs:
#   make demo   install, then run the main job embedded (no servers)
#   make test   install everything the tests need, start Kafka and ClickHouse, run them all
#   make console  the surveillance console in a browser, over the demo's store
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo console test install install-test lint fuzz unit bench services-start services-stop clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-test: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

demo: install
	$(BIN)/pitwatch demo

console: $(BIN)/python
	$(BIN)/pip install -q -e '.[console]'
	test -d pitwatch-data/chdb || $(BIN)/pitwatch demo
	$(BIN)/pitwatch serve --data pitwatch-data --clock store

test: install-test
	scripts/test.sh

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/mypy

# the C reader under ASan and UBSan, fuzzed against fastavro for FUZZ_SECONDS (make test runs it)
fuzz: install-test
	tests/fuzz/sanitize.sh $${FUZZ_SECONDS:-120}

unit: install-test
	$(BIN)/python -m pytest -q -n auto -m "not integration"

bench: install-test
	$(BIN)/python bench/codec.py
	$(BIN)/python bench/audit.py

services-start:
	deploy/services.sh start

services-stop:
	deploy/services.sh stop

clean:
	deploy/services.sh stop || true
	rm -rf .run pitwatch-data
