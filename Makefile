# The two set-up commands: `make up` and `make test`. Each creates .venv and installs when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Test files run on this many workers (xdist, a file's tests on one worker so its module fixtures are shared):
# e2e and integration tests mostly wait on stacks and servers, so more workers than cores pays on 2 cores.
PYTEST_WORKERS ?= 4

.PHONY: up test bench soak clean screenshots

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip >/dev/null
	$(BIN)/python -m pip install -q -e '.[server,test]'
	@touch $(STAMP)

up: $(STAMP)
	$(BIN)/roving up

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

bench: $(STAMP)
	@# slurm_peer.py installs and starts a Slurm peer: run it on its own (see README, Benchmarks)
	@for b in ops/bench/*.py; do case $$b in *slurm_peer.py) continue;; esac; echo "== $$b"; $(BIN)/python $$b; done

soak: $(STAMP)
	$(BIN)/python -m ops.soak --seed $(or $(SOAK_SEED),1) --duration $(or $(SOAK_SECONDS),1800) --faults all

clean:
	rm -rf $(VENV) .roving .pytest_cache

# A PNG of each UI page (docs/screenshots/) from headless chromium against a fresh local stack.
screenshots: $(STAMP)
	$(BIN)/python -m tests.browser.screenshots docs/screenshots
