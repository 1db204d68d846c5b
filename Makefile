# The two commands: `make run` (the service on its embedded default) and `make test`.
# Each sets up the virtual environment in .venv from the lock file first.

PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint lock bench clean browser deploy-tools

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip install -q --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/runnel serve

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

test: lint browser deploy-tools
	$(BIN)/pytest

# The viewer test drives Debian's chromium (through Playwright's `executable_path`,
# never `playwright install`): installed here when missing (CI runs as root).
browser:
	test -x /usr/bin/chromium || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

# The deployment kit's tests run Debian's nginx as a plain process in front of two nodes
# (tests/e2e/test_nginx.py) and check the systemd units with systemd-analyze
# (tests/deploy/): installed here when missing (CI runs as root).
deploy-tools:
	test -x /usr/sbin/nginx || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nginx)
	test -x /usr/bin/systemd-analyze || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y systemd)

# Re-resolve the lock after changing pyproject.toml dependencies.
lock:
	$(BIN)/uv pip compile pyproject.toml --extra test --python-version 3.11 -o requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
