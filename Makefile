# The two commands a fresh clone needs: `make serve` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# the minutes each model trains: scripts/train_all.sh's default unless CHECKPOINT_MINUTES is given
CHECKPOINT_MINUTES ?=

.PHONY: install serve test test-installed test-container lint checkpoints bench clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch==2.13.0 first, on its own, so pip takes the CPU wheel and nothing pulls a CUDA build.
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The page's accessibility audit injects axe-core (package.json, pinned in package-lock.json) from
# node_modules/; nothing the server ships needs Node.
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package-lock.json
	@command -v npm >/dev/null || { echo "npm not found (apt-get install -y npm)"; exit 1; }
	npm ci --silent --no-audit --no-fund
	touch $(NODE_STAMP)

install: $(STAMP) $(NODE_STAMP)

# uvicorn's limits for an open network (docs/SERVER.md): request heads within
# ATTENTION_LAB_HEADER_TIMEOUT seconds (app/serving.py), idle keep-alive connections closed after 5 s,
# at most 1024 connections and tasks (more: 503, docs/SERVER.md), 256 waiting to be accepted. The app
# logs each request itself, with its duration and id (app/request_log.py), so uvicorn's access log is off.
UVICORN_LIMITS := --http app.serving:H11 --timeout-keep-alive 5 --limit-concurrency 1024 --backlog 256 --no-access-log

# Server processes: one. WORKERS=2 on two cores answers many typing readers sooner at the median, at
# twice the memory; one process's Python runs one thread at a time (docs/SERVER.md, "Two processes").
WORKERS ?= 1

serve: $(STAMP)
	MALLOC_ARENA_MAX=2 $(PY) -m uvicorn app.main:app --host 127.0.0.1 --port 8000 --workers $(WORKERS) $(UVICORN_LIMITS)

# The suite on TEST_WORKERS processes (pytest-xdist), each handed whole test files, so that a file's
# module fixtures (a browser context, a server) are set up once; TEST_WORKERS=0 runs it in this
# process. The tests marked `alone` (what a reader meets at the production limits) run
# after the rest, one at a time.
TEST_WORKERS ?= 2

# The second run collects only the files that hold `alone` tests: collecting the whole suite again
# to keep two of its tests took longer than those files' own imports.
ALONE_FILES = $(shell grep -rl --include='test_*.py' 'pytest.mark.alone' tests)

test: lint $(NODE_STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not alone"
	$(PY) -m pytest -q -m alone $(ALONE_FILES)

# What ships, started as it ships (both run by .ci/run after `make test`): the server from a fresh
# venv holding only `pip install .`, with the Dockerfile's command line; then the image, built with
# podman, started read-only as its non-root user and probed (as root; needs podman, debootstrap, jq).
test-installed:
	scripts/check-installed.sh

test-container:
	scripts/check-container.sh

# Style (ruff) and the import contracts of pyproject.toml (import-linter: the layers, the leaves, no
# import circles); `make test` runs it first.
lint: $(STAMP)
	$(VENV)/bin/ruff check app models tests bench scripts
	$(VENV)/bin/lint-imports --no-cache

# Speed as ratios that travel between machines (bench/floor.py), whether the served weight layout
# changes any translation or map on the test split (bench/fidelity.py), our translation against
# CTranslate2's on the same weights (bench/peer.py; ctranslate2 is installed for it, the app does not
# use it), 16 clients for 60 s of mixed requests (bench/load.py), typing readers per replica
# (bench/readers.py), then keystroke -> update in a real
# browser (bench/bench_page.py; compare it across machines beside floor.json's bandwidth), the page
# under Lighthouse, desktop and mobile presets (bench/lighthouse.py; it installs the pinned Lighthouse
# with npm into ~/.cache/attention-lab on first use, so it needs Node 18+; nothing else does) and a
# shared chapter link, /?ch=1 to 11, timed in a fresh browser (bench/chapter_links.py), and start-up to
# healthy (bench/startup.py); figures printed and written to bench/results/. Run on a quiet machine.
bench: $(STAMP)
	$(PY) -m pip install --quiet "ctranslate2>=4.5"
	$(PY) bench/floor.py --json bench/results/floor.json
	$(PY) bench/fidelity.py --models transformer,lstm-additive --json bench/results/fidelity.json
	$(PY) bench/peer.py --json bench/results/peer.json
	$(PY) bench/load.py --json bench/results/load.json
	$(PY) bench/readers.py --json bench/results/readers.json
	$(PY) bench/bench_page.py --json > bench/results/page.json
	$(PY) bench/lighthouse.py --runs 3 --json bench/results/lighthouse.json
	$(PY) bench/chapter_links.py --runs 3 --json bench/results/chapter_links.json
	$(PY) bench/startup.py --runs 3 --json bench/results/startup.json

# Re-train and re-evaluate all five shipped models from scratch (hours on a 2-core CPU; see README).
checkpoints: $(STAMP)
	FRESH=1 $(if $(CHECKPOINT_MINUTES),MINUTES="$(CHECKPOINT_MINUTES)") PY=$(PY) scripts/train_all.sh

clean:
	rm -rf $(VENV) .pytest_cache node_modules
