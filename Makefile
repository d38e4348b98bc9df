# skillgraph — `make demo` and `make test` work on a fresh machine (they set themselves up).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
APT_PACKAGES := $(shell cat .ci/apt-packages.txt 2>/dev/null)

.PHONY: demo test lint check venv system-deps bench clean

venv: $(STAMP)

# pip is upgraded first: pip 23 mis-resolves lxml[html_clean] and trafilatura then fails to import.
$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -U pip
	$(VENV)/bin/pip install -q -r requirements.txt
	touch $(STAMP)

# System packages the tests start for real (redis-server, chromium, python3.11-doc, mediawiki...).
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi

# DEMO_ARGS go to `scrapy crawl` as they are, e.g. DEMO_ARGS="-s SKILLGRAPH_RENDER_ENABLED=False".
demo: venv
	$(PY) demo/demo.py $(DEMO_ARGS)

test: venv system-deps
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check skillgraph tests bench demo
	$(VENV)/bin/mypy

check: lint test

bench: venv system-deps
	$(PY) bench/crawl.py

clean:
	rm -rf graphs items store.sqlite3 .skillgraph .pytest_cache
