# The whole build vocabulary. Each target installs what is missing first (idempotent, quick when done).
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup setup-browser check demo test test-fast bench docs clean screenshots

setup:
	@scripts/setup.sh

setup-browser:
	@WITH_BROWSER=1 scripts/setup.sh

# The gate: formatting, lint and types (config in pyproject.toml).
check: setup
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

demo: setup
	$(PY) -m workbench.demo

test: setup-browser check
	$(PY) -m pytest -n 2 --dist loadgroup --durations=25

test-fast: setup check
	$(PY) -m pytest -n 2 --dist loadgroup -m "not slow and not browser"

# The documentation site into site/: the generated reference pages first, then a strict build (a broken link,
# anchor or docstring reference fails). Offline; griffe reads the API from the source without importing it.
docs: setup
	$(PY) scripts/render_reference.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

bench: setup
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# The docs' pictures, from the real-browser tests (JupyterLab in Chromium): test-artifacts/ -> docs/images/.
screenshots: setup-browser
	@scripts/screenshots.sh

clean:
	rm -rf $(VENV) .venv-verifiers .pytest_cache site
