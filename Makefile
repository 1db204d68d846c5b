# The two commands: `make run` (the service on its embedded default) and `make test`.
# Each sets up the virtual environment in .venv from the lock file first.

PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint lock clean browser deploy-tools fuzz chaos bench-http bench-peers example
.PHONY: conformance conformance-deps typescript-sdk

$(STAMP): requirements.lock pyproject.toml sdk/python/pyproject.toml
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

# Four workers on two cores: most tests wait on real processes (servers, timers, faults),
# so two workers leave the cores idle (the e2e suite ran in 0.58x the time with four).
test: lint browser deploy-tools conformance-deps typescript-sdk
	$(BIN)/pytest -n 4

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

# The Durable Streams conformance suite (tests/conformance, ADR 0041): its npm packages go into
# tests/conformance/node_modules (ignored) from the committed lock, once per lock change.
CONFORMANCE := tests/conformance
$(CONFORMANCE)/node_modules/.installed-stamp: $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

conformance-deps: $(CONFORMANCE)/node_modules/.installed-stamp

# The TypeScript SDK (sdk/typescript, ADR 0068): its dev packages from the committed lock,
# once per lock change, and its dist/ built again when a source changes. Its tests
# (tests/sdk_typescript) run node's test runner and Chromium over the build.
TS_SDK := sdk/typescript
$(TS_SDK)/node_modules/.installed-stamp: $(TS_SDK)/package-lock.json
	cd $(TS_SDK) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(TS_SDK)/node_modules/.built-stamp: $(TS_SDK)/node_modules/.installed-stamp $(TS_SDK)/tsconfig.json $(wildcard $(TS_SDK)/src/*.ts)
	cd $(TS_SDK) && npm run --silent build
	touch $@

typescript-sdk: $(TS_SDK)/node_modules/.built-stamp

# The suite alone, against a `runnel serve` it starts on Postgres; prints the counts.
conformance: install conformance-deps
	$(BIN)/pytest -s -p no:randomly $(CONFORMANCE)/test_conformance.py

# The long fuzz run (ADR 0026): schemathesis with FUZZ_EXAMPLES cases per operation, then
# each atheris target for FUZZ_SECONDS, its corpus kept in .fuzz/<target> between runs;
# a crash leaves its input in .fuzz/ and stops the run.
FUZZ_SECONDS ?= 300
FUZZ_EXAMPLES ?= 1000
FUZZ_TARGETS := cursor last_event_id request_body definition record_payload base64_rule
# The fault suite at length: each fault under CHAOS_SECONDS of load, one table row each
# (`make test` runs the same faults for a few seconds).
CHAOS_SECONDS ?= 30
chaos: install
	@RUNNEL_CHAOS_SECONDS=$(CHAOS_SECONDS) $(BIN)/pytest -s -p no:randomly \
	  tests/chaos/ > .chaos.log 2>&1; status=$$?; \
	  grep -E '^\| ' .chaos.log | awk '!(/^\| (fault|---)/ && seen[$$0]++)'; \
	  tail -1 .chaos.log; exit $$status

fuzz: install
	RUNNEL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -x tests/fuzz/test_schemathesis.py
	@for target in $(FUZZ_TARGETS); do \
	  mkdir -p .fuzz/$$target && \
	  echo "fuzzing $$target for $(FUZZ_SECONDS) s" && \
	  $(BIN)/python -m tests.fuzz.run $$target .fuzz/$$target -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=.fuzz/ -print_final_stats=1 || exit 1; \
	done

# The agent example (examples/agent): a DBOS workflow answering in turns, on the embedded
# default; open http://127.0.0.1:8090/.
example: install
	$(BIN)/python -m examples.agent.run

# Appends over HTTP beside the echo floor of the same stack (bench/http.py); bench-peers adds
# the Durable Streams reference server (npm, into a temp dir) under the same client.
bench-http: install
	$(BIN)/python -m bench.http

bench-peers: install
	$(BIN)/python -m bench.http --peers

# Re-resolve the lock after changing pyproject.toml dependencies.
lock:
	$(BIN)/uv pip compile pyproject.toml --extra test --extra otel --python-version 3.11 -o requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis .fuzz
