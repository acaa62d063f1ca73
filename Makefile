# labkit — the two commands a user needs:  make lab   |   make test
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PORT    ?= 8888
LAB_ARGS ?=
DIR     ?= submissions
ROOT_FLAG := $(shell [ "$$(id -u)" = "0" ] && echo --allow-root)

.PHONY: lab test install notebooks bench grade doctor clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

lab: install
	$(BIN)/jupyter lab --ip=127.0.0.1 --port=$(PORT) $(ROOT_FLAG) $(LAB_ARGS) notebooks/00_tools.ipynb

test: install
	$(BIN)/python tools/ensure_browser.py || true
	$(BIN)/python -m pytest

notebooks: install
	$(BIN)/labkit release

bench: install
	$(BIN)/labkit bench all

grade: install
	$(BIN)/labkit grade $(DIR) --out grades.csv

doctor: install
	$(BIN)/labkit doctor

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info test-artifacts
