# Two entry points that work on a fresh machine with Python 3.11+ and git:
#   make demo   - set up .venv and run memctl on the bundled sample_memory/
#   make test   - set up .venv and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench venv clean

$(BIN)/memctl: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(BIN)/memctl

venv: $(BIN)/memctl

# The demo works on a copy: sample_memory/ stays as it is in the repository.
DEMO_STORE ?= $(shell mktemp -d)/store
DEMO := $(BIN)/memctl --store $(DEMO_STORE)
demo: venv
	cp -r sample_memory $(DEMO_STORE)
	$(DEMO) init
	@echo; echo '$$ memctl list --project blog-backend'
	@$(DEMO) list --project blog-backend
	@echo; echo '$$ memctl show <the newest decision>'
	@$(DEMO) show $$($(DEMO) list --project blog-backend --type decision --limit 1 --json | $(BIN)/python -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
	@echo "(demo store: $(DEMO_STORE))"

test: venv
	$(BIN)/python -m pytest -n 2 -q -p no:cacheprovider

lint: venv
	$(BIN)/ruff check memctl tests bench

bench: venv
	$(BIN)/python bench/bench_search.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
