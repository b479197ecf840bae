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

# The demo works on a copy: sample_memory/ stays as it is in the repository. The temporary
# folder is made once, on first use (a plain `?=` would run mktemp at every reference).
DEMO_STORE ?= $(eval DEMO_STORE := $$(shell mktemp -d)/store)$(DEMO_STORE)
DEMO := $(BIN)/memctl --store $(DEMO_STORE)
demo: venv
	cp -r sample_memory $(DEMO_STORE)
	$(DEMO) init
	@echo; echo '$$ memctl list --project blog-backend --limit 8'
	@$(DEMO) list --project blog-backend --limit 8
	@echo; echo '$$ memctl search postgres --project blog-backend'
	@$(DEMO) search postgres --project blog-backend --limit 5
	@echo; echo '$$ memctl search 连接池 --all-projects'
	@$(DEMO) search 连接池 --all-projects --limit 5
	@echo; echo '$$ memctl search postgress   (misspelt: its closest words)'
	@$(DEMO) search postgress --project blog-backend --limit 3
	@echo; echo '$$ memctl search "what database does the blog use?"   (a question: best match)'
	@$(DEMO) search "what database does the blog use?" --project blog-backend --limit 2
	@echo; echo '$$ memctl search 为什么CRM接口会登录超时   (a Chinese question, no spaces)'
	@$(DEMO) search 为什么CRM接口会登录超时 --all-projects --limit 1
	@echo; echo '$$ memctl get blog-backend database   (the exact fact)'
	@$(DEMO) get blog-backend database --project blog-backend
	@echo; echo '$$ memctl recall "deploy" --project blog-backend'
	@$(DEMO) recall deploy --project blog-backend
	@echo; echo '$$ memctl health'
	@$(DEMO) health
	@echo; echo '$$ memctl archive --dry-run'
	@MEMCTL_NOW=2026-11-30T12:00:00Z $(DEMO) archive --dry-run
	@echo "(demo store: $(DEMO_STORE))"

test: venv
	$(BIN)/python -m pytest -n 2 -q -p no:cacheprovider

lint: venv
	$(BIN)/ruff check memctl tests bench

bench: venv
	$(BIN)/python bench/bench_search.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
