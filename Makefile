# labkit — the two commands a user needs:  make lab   |   make test
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PORT    ?= 8888
LAB_ARGS ?=
DIR     ?= submissions
NB      ?=
ROOT_FLAG := $(shell [ "$$(id -u)" = "0" ] && echo --allow-root)

.PHONY: lab test test-all test-full test-hosts test-load test-arm64 install warm solutions notebooks book book-student bench grade nbgrader doctor clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@# jsonschema imports rfc3987-syntax when it is installed (jupyter-events asks for
	@# jsonschema[format-nongpl]), and that package compiles 38 lark grammars at import: 2.7 s
	@# more for every process that imports nbformat or jupyter_server (the grader, JupyterLab,
	@# every test that starts one). Without it jsonschema only skips its "iri" format check.
	$(BIN)/python -m pip uninstall -q -y rfc3987-syntax
	@touch $(STAMP)

# JupyterLab on lesson 00. The first time (and after a change to labkit/), labkit's kernels are
# compiled into numba's cache in the background, niced, while you work on lesson 00 (which
# needs none of them): `labkit warm --if-needed`, under a second once warm; LABKIT_WARM=0 skips
lab: install
	@$(BIN)/labkit warm --if-needed --nice 10 --background
	$(BIN)/jupyter lab --ip=127.0.0.1 --port=$(PORT) $(ROOT_FLAG) $(LAB_ARGS) notebooks/00_tools.ipynb

# numba's cache of labkit's kernels (labkit/**/__pycache__), all labs in parallel; again after
# a change to labkit/ only the labs it touches
warm: install
	$(BIN)/labkit warm --if-needed

# make test: the default tier, every property proven once (CONTRIBUTING.md, "Test tiers");
# make test-all: both tiers in one run; make test-full: only the tests marked full (what .ci/run
# adds after make test, so no test runs twice). Each test's time goes to
# build/test-times/<tier>.xml; the slowest are printed at the end. pytest-xdist runs the tests in
# WORKERS processes, whole files per worker (nbval's cells of a notebook share one kernel, in
# order), the longest files first (conftest.py). make test and test-all: one more worker than
# cores, at most 6 (its tests wait on subprocesses, kernels and the browser; CONTRIBUTING.md
# "Test tiers" has the times measured); make test-full: one per core (its browser runs of the
# five solutions keep their time limits). WORKERS=0 runs in one process.
# numba's cache of labkit's kernels is kept between runs, across clones of the same labkit
# (tools/numba_keep.py: restored before, saved after; each lab keyed by its files and the shared
# ones, as labkit warm keys it, with numba and the CPU: a change to one lab compiles only that lab)
CORES := $(shell $(PY) -c "import os; print(len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 2)")
WORKERS ?= $(shell $(PY) -c "print(min($(CORES) + 1, 6))")
FULL_WORKERS ?= $(CORES)
TIER_test := default
TIER_test-all := all
TIER_test-full := full
N_test := $(WORKERS)
N_test-all := $(WORKERS)
N_test-full := $(FULL_WORKERS)
KEEP_NUMBA = $(BIN)/python tools/numba_keep.py
test test-all test-full: install
	$(BIN)/python tools/ensure_browser.py || true
	$(BIN)/python -m labkit.grade.sandbox --ensure
	@$(KEEP_NUMBA) restore
	$(BIN)/python -m pytest --tier $(TIER_$@) -n $(N_$@) --dist loadfile \
		--junitxml=build/test-times/$(TIER_$@).xml; rc=$$?; $(KEEP_NUMBA) save; exit $$rc
	@$(BIN)/python tools/test_times.py build/test-times/$(TIER_$@).xml

# the x86 host matrix: ISA-sensitive tests with numba targeting an AVX2 laptop, an AVX-512 core
# preferring 256-bit, Zen 4 and the host (tools/hosts/matrix.py)
test-hosts: install
	$(BIN)/python -m labkit.grade.sandbox --ensure
	@$(KEEP_NUMBA) restore
	$(BIN)/python tools/hosts/matrix.py; rc=$$?; $(KEEP_NUMBA) save; exit $$rc

# the solutions executed (nbval, checks strict) while another process keeps one core busy
test-load: install
	@$(KEEP_NUMBA) restore
	$(BIN)/python tools/load_test.py; rc=$$?; $(KEEP_NUMBA) save; exit $$rc

# ISA-sensitive tests on an emulated AArch64 (qemu user mode; root; cached in .cache/arm64)
test-arm64: install
	bash tools/arm64/job.sh

# solutions/NN_name.md (the only sources) -> executed, stamped solutions/NN_name.ipynb
# (all of them, one after the other; NB="01_alignment" for just one)
solutions: install
	$(BIN)/labkit solutions $(NB)

# student copies notebooks/NN_name.ipynb from the same sources
notebooks: install
	$(BIN)/labkit release

# The instructor targets (book, book-student, grade, nbgrader) use the installed venv as it is:
# they never install into it (a course's venv stays what it was when term started) and stop
# with a message when there is none
NEED_VENV = @test -x $(BIN)/python || { echo "make $@: no $(BIN)/python here: run make install first" >&2; exit 1; }

# static course website of the executed solutions (offline) -> build/book/index.html
book:
	$(NEED_VENV)
	$(BIN)/python tools/build_book.py

# the student book: the student copies only (no solutions, no outputs; each exercise's hints in
# closed toggles, one tier at a time) -> build/book-student/
book-student:
	$(NEED_VENV)
	$(BIN)/python tools/build_book.py --student

# every lab's benchmark; the targets' table replaces the one in README.md (between its markers;
# BENCH_MD=other.md writes elsewhere, BENCH_MD= only prints)
BENCH_MD ?= README.md
bench: install
	$(BIN)/labkit bench all $(if $(BENCH_MD),--markdown $(BENCH_MD))

# $(OUT)/grades.csv (+ grades-wide.csv, grades.json, feedback/, report.html, the result cache
# .labkit-grade-cache/), each submission in a bubblewrap sandbox (Debian: bubblewrap +
# util-linux; installed here when root). OUT defaults to grades/ (ignored by git); give a folder
# outside the checkout for a course: make grade DIR=~/course/submitted OUT=~/course/grades
# GRADE_ARGS="--course ~/course/course.toml" (docs/course.md)
OUT     ?= grades
GRADE_ARGS ?=
grade:
	$(NEED_VENV)
	$(BIN)/python -m labkit.grade.sandbox --ensure
	$(BIN)/labkit grade $(DIR) --out $(OUT)/grades.csv --json $(OUT)/grades.json $(GRADE_ARGS)

# nbgrader with the venv's tools on PATH (it runs `alembic` by name), run in the nbgrader course
# folder COURSE (its nbgrader_config.py, gradebook.db, source/, release/, submitted/, …), which
# must exist and lie outside this checkout: make nbgrader COURSE=~/course ARGS="autograde lab1"
COURSE  ?=
nbgrader:
	$(NEED_VENV)
	@test -n "$(COURSE)" || { echo "make nbgrader: name the nbgrader course folder (outside this checkout): make nbgrader COURSE=~/course ARGS=\"autograde lab1\"" >&2; exit 1; }
	@test -d "$(COURSE)" || { echo "make nbgrader: COURSE=$(COURSE) is not a folder; create it (mkdir -p $(COURSE)) or name the course folder you have" >&2; exit 1; }
	@c=$$(cd "$(COURSE)" && pwd -P); r=$$(pwd -P); case "$$c/" in "$$r/"*) echo "make nbgrader: COURSE=$(COURSE) is this checkout or a folder in it; nbgrader would write its course state (gradebook.db, source/, release/, submitted/, …) into the checkout — give a course folder outside it" >&2; exit 1;; esac
	cd "$(COURSE)" && PATH="$(CURDIR)/$(BIN):$$PATH" "$(CURDIR)/$(BIN)/nbgrader" $(ARGS)

doctor: install
	$(BIN)/labkit doctor

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info test-artifacts
