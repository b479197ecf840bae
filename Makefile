# Two entry points that work on a fresh machine with Python 3.11+ and git:
#   make demo   - set up .venv and run memctl on the bundled sample_memory/
#   make test   - set up .venv and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench venv clean

$(BIN)/memctl: pyproject.toml hatch_build.py memctl/disk/_statwalk.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# The distribution was called memctl before it became memctl-md (README, "Install"): an
	@# older .venv's copy goes first, so two distributions never own one `memctl` command.
	$(BIN)/python -m pip uninstall --quiet --yes memctl 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(BIN)/memctl

venv: $(BIN)/memctl

# The demo works on a copy in a temporary folder (sample_memory/ stays as it is in the
# repository), removed when the demo ends, also when a step fails or is interrupted: one
# shell runs the whole recipe so its trap sees every step (tests/test_rough_edges.py).
demo: venv
	@set -e; \
	tmp=$$(mktemp -d); \
	trap 'rm -rf "$$tmp"' EXIT; \
	trap 'exit 130' INT TERM; \
	demo() { "$(BIN)/memctl" --store "$$tmp/store" "$$@"; }; \
	cp -r sample_memory "$$tmp/store"; \
	echo '$$ memctl init'; \
	demo init; \
	echo; echo '$$ memctl list --project blog-backend --limit 8'; \
	demo list --project blog-backend --limit 8; \
	echo; echo '$$ memctl search postgres --project blog-backend'; \
	demo search postgres --project blog-backend --limit 5; \
	echo; echo '$$ memctl search 连接池 --all-projects'; \
	demo search 连接池 --all-projects --limit 5; \
	echo; echo '$$ memctl search postgress   (misspelt: its closest words)'; \
	demo search postgress --project blog-backend --limit 3; \
	echo; echo '$$ memctl search "what database does the blog use?"   (a question: best match)'; \
	demo search "what database does the blog use?" --project blog-backend --limit 2; \
	echo; echo '$$ memctl search 为什么CRM接口会登录超时   (a Chinese question, no spaces)'; \
	demo search 为什么CRM接口会登录超时 --all-projects --limit 1; \
	echo; echo '$$ memctl get blog-backend database   (the exact fact)'; \
	demo get blog-backend database --project blog-backend; \
	echo; echo '$$ memctl recall "deploy" --project blog-backend'; \
	demo recall deploy --project blog-backend; \
	echo; echo '$$ memctl health'; \
	demo health; \
	echo; echo '$$ memctl archive --dry-run'; \
	MEMCTL_NOW=2026-11-30T12:00:00Z demo archive --dry-run; \
	echo; echo "(the demo ran on a temporary copy of sample_memory/, now removed)"

test: venv
	$(BIN)/python -m pytest -n 2 -q -p no:cacheprovider

lint: venv
	$(BIN)/ruff check memctl tests bench

bench: venv
	$(BIN)/python bench/bench_search.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
