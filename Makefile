# npumon: `make demo` and `make test` work on a fresh machine with only Python 3 (and root for
# apt-get, which installs Debian's prometheus package for promtool and the fleet tests, and
# victoria-metrics for the alert catalog and the fleet tests on VictoriaMetrics).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   ?= .demo
PORT   ?= 9732
DEMO_WAIT ?= 20
LISTEN ?= :$(PORT)

# Python keeps its compiled modules (__pycache__, which git ignores) even where the caller's
# environment says not to: the tests start hundreds of simulator and daemon processes, and each
# would otherwise compile npumon's modules again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: all demo demo-stop test test-fast test-pythons lint format typecheck imports bench tools generate clean

all: test

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# promtool (rules and exposition linting), prometheus (fleet tests, and in agent mode),
# victoria-metrics (VictoriaMetrics + vmalert: the alert catalog, tests/alerts, and the fleet
# tests, tests/fleet/test_victoriametrics_live.py), openssl (test certificates),
# gcc + binutils (the fake libdcmi.so and `nm -D`), chromium (the HTML report opened
# headless) and prometheus-node-exporter (the benches' comparison, run as a binary on a
# loopback port) come from Debian.
tools:
	@if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1 \
	    || ! command -v victoria-metrics >/dev/null 2>&1 || ! command -v vmalert >/dev/null 2>&1 \
	    || ! command -v openssl >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1 \
	    || ! command -v nm >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1 \
	    || ! test -x /usr/bin/prometheus-node-exporter || ! command -v ip >/dev/null 2>&1; then \
	  echo "installing Debian packages 'prometheus' (promtool + prometheus), 'victoria-metrics' (victoria-metrics + vmalert), 'openssl' (TLS tests), 'gcc' and 'binutils' (fake libdcmi.so), 'chromium' (HTML report tests), 'prometheus-node-exporter' (bench comparison), 'iproute2' (MTU-1500 network namespace flood)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus victoria-metrics openssl gcc libc6-dev binutils chromium prometheus-node-exporter iproute2 >/dev/null; \
	fi
	@promtool --version 2>&1 | head -n 1
	@dpkg-query -W -f='victoria-metrics $${Version}\n' victoria-metrics 2>/dev/null || true

PY_TREES := daemon exporters simulator podresources yamlfile tests bench deploy docs setup.py

# The release workflow: actionlint (types, expressions, shell) and zizmor (template injection,
# permissions, unpinned actions, credentials; offline, the pedantic persona).
WORKFLOWS := .github/workflows
lint: $(STAMP)
	$(BIN)/ruff check $(PY_TREES)
	$(BIN)/ruff format --check $(PY_TREES)
	$(BIN)/actionlint $(WORKFLOWS)/*.yml
	$(BIN)/zizmor --offline --persona pedantic --quiet $(WORKFLOWS)

# `ruff format` writes what `make lint` checks.
format: $(STAMP)
	$(BIN)/ruff format $(PY_TREES)

# mypy and import-linter see npumon.* through one committed link, .import-root/npumon -> .. (the
# wheel's mapping npumon -> the repository root, setup.py): mypy through mypy_path in
# pyproject.toml, import-linter through PYTHONPATH. The editable install's import hook is
# invisible to static analysis.
typecheck: $(STAMP)
	$(BIN)/mypy -p npumon.daemon -p npumon.exporters -p npumon.simulator -p npumon.podresources \
	  -p npumon.yamlfile

# The layering (docs/architecture.md, "Import rules") as import-linter contracts: .importlinter
imports: $(STAMP)
	PYTHONPATH=.import-root $(BIN)/lint-imports --no-cache

# pytest-xdist: TEST_JOBS workers (2 on a 2-core machine; TEST_JOBS=0 runs in one process).
# The tests that share the live fleet run on one worker, in a row (--dist loadgroup,
# tests/conftest.py), so it starts once and stops after them. The 20 slowest tests
# are listed at the end, so growth shows.
# NPUMON_TEST_TIMEOUT_FACTOR scales every deadline a test waits under (tests/helpers/wait.py).
TEST_JOBS ?= 2
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadgroup

test: $(STAMP) tools lint typecheck imports
	$(PYTEST) --durations=20

# The inner loop: parsers, unit, rendering and golden tests (the fakes answered in-process),
# about 40 CPU-seconds, 30 s wall on two workers. Tests that start real processes or servers
# are marked `integration`, the live Prometheus ones `fleet` (pyproject). `make test` runs
# those too, plus lint, mypy and the import contracts.
test-fast: $(STAMP) tools
	$(PYTEST) -m "not integration and not fleet"

# The HTTP edge's and TLS tests on each Python the package claims (requires-python >= 3.11;
# 3.12 and 3.13 changed asyncio's TLS transport), each in its own venv (.venv-3.12, ...) built
# from pyenv's or the PATH's interpreter; a version not installed here is said and skipped.
# Not in `make test`: each venv takes about 90 s to build, and the run a minute per version.
PYTHONS    ?= 3.11 3.12 3.13
EDGE_TESTS := tests/exporters/test_http.py tests/exporters/test_hostile.py \
	tests/exporters/test_early_eof.py tests/exporters/test_write_floods.py \
	tests/exporters/test_edge_fuzz.py tests/exporters/test_fd_cap.py tests/exporters/test_auth.py \
	tests/exporters/test_edge.py tests/exporters/test_floods_vs_node_exporter.py \
	tests/exporters/test_weblive.py
test-pythons: tools
	@status=0; for v in $(PYTHONS); do \
	  py=$$(for c in $$(command -v python$$v) $$(ls -d $$HOME/.pyenv/versions/$$v.*/bin/python$$v 2>/dev/null); do \
	    $$c -V >/dev/null 2>&1 && echo $$c && break; done); \
	  if [ -z "$$py" ]; then echo "== python$$v: not installed here, skipped"; continue; fi; \
	  if [ ! -f .venv-$$v/.installed-stamp ]; then \
	    $$py -m venv .venv-$$v && .venv-$$v/bin/python -m pip install --quiet -e '.[test]' \
	      && touch .venv-$$v/.installed-stamp || { echo "== python$$v: install FAILED"; status=1; continue; }; \
	  fi; \
	  echo "== python$$v ($$(.venv-$$v/bin/python -V))"; \
	  .venv-$$v/bin/python -m pytest -q -n 0 -p no:cacheprovider $(EDGE_TESTS) || status=1; \
	done; exit $$status

# The Helm chart's copies of the rules and dashboards, and deploy/kubernetes/npumon.yaml (the
# chart rendered), after a change to config/prometheus/npumon-rules.yml, grafana/dashboards or
# the chart. tests/fleet/test_helm_chart.py fails while they are out of date. docs/metrics.md
# and the README's collector table from the family rows (tests/exporters/test_metrics_doc.py).
generate: $(STAMP)
	$(BIN)/python deploy/helm/generate.py
	$(BIN)/python docs/generate_metrics.py
	$(BIN)/python docs/generate_catalog.py

# The image's pinned dependencies (with hashes for every platform's wheels), from
# pyproject.toml: requirements.lock for the default image, requirements-profiling.lock with the
# profiling extra. They are rewritten when pyproject.toml changes; pip-compile keeps every pin
# that still satisfies it. `make lock LOCK_UPGRADE=--upgrade` moves every pin to the newest.
# tests/fleet/test_image.py checks that the locks cover pyproject's dependencies.
LOCKS        := requirements.lock requirements-profiling.lock
LOCK_UPGRADE ?=
PIP_COMPILE   = $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url \
  --no-emit-find-links $(LOCK_UPGRADE)
.PHONY: lock
lock: $(STAMP)
	$(PIP_COMPILE) --output-file requirements.lock pyproject.toml
	$(PIP_COMPILE) --extra profiling --output-file requirements-profiling.lock pyproject.toml

requirements.lock: pyproject.toml | $(STAMP)
	$(PIP_COMPILE) --output-file $@ pyproject.toml

requirements-profiling.lock: pyproject.toml | $(STAMP)
	$(PIP_COMPILE) --extra profiling --output-file $@ pyproject.toml

# The image for amd64 and arm64 hosts (Dockerfile) with docker buildx, in two variants: the
# default, without pandas/numpy, and $(IMAGE)-profiling (VARIANT=profiling: the analysis
# worker's npumon[profiling] extra), which the chart runs when profiling is enabled. Each
# installs its lock file's pins. A multi-platform image cannot be loaded into the local image
# store: push it (IMAGE naming your registry, IMAGE_OUTPUT=--push), or build one platform and
# load it (PLATFORMS=linux/arm64 IMAGE_OUTPUT=--load). Without an output it is built and left in
# the build cache. Then both sizes are printed (image-sizes).
# the version: pyproject.toml's, which deploy/release/version.py keeps the chart in step with
VERSION       = $(shell $(PYTHON) deploy/release/version.py)
IMAGE        ?= npumon:$(VERSION)
PLATFORMS    ?= linux/amd64,linux/arm64
IMAGE_OUTPUT ?=
.PHONY: image image-sizes
image: $(LOCKS)
	docker buildx build --platform $(PLATFORMS) -t $(IMAGE) $(IMAGE_OUTPUT) .
	docker buildx build --platform $(PLATFORMS) --build-arg VARIANT=profiling -t $(IMAGE)-profiling $(IMAGE_OUTPUT) .
	@$(MAKE) --no-print-directory image-sizes IMAGE=$(IMAGE)

# Both variants' size as the local image store has them (uncompressed); a pushed image's
# compressed layers: docker buildx imagetools inspect --raw <ref>.
image-sizes:
	@for ref in $(IMAGE) $(IMAGE)-profiling; do \
	  if size=$$(docker image inspect --format '{{.Size}}' $$ref 2>/dev/null); then \
	    echo "$$ref: $$((size / 1000000)) MB"; \
	  else \
	    echo "$$ref: not in the local image store (IMAGE_OUTPUT=--load with one platform loads it)"; \
	  fi; \
	done


# Both variants built from the Dockerfile with buildah and run against the simulator's npu-smi
# (deploy/image/test.sh: collect --once, run serving /metrics, the non-root user, the profiling
# worker's pandas), then their sizes. No Docker daemon or registry: the base is Debian bookworm
# made with mmdebstrap, cached in $(IMAGE_CACHE) and in buildah's store (vfs storage, chroot
# isolation), passed as the Dockerfile's PYTHON_IMAGE. Not part of `make test` (minutes, and
# root); .ci/run runs it after. image-tools installs buildah and mmdebstrap from Debian. It
# installs the committed lock files as they are (`make lock` rewrites them, never this target).
IMAGE_CACHE ?= /var/tmp/npumon-image
.PHONY: image-test image-tools
image-test: image-tools
	IMAGE_CACHE=$(IMAGE_CACHE) deploy/image/test.sh

image-tools:
	@if ! command -v buildah >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1 \
	    || ! command -v newuidmap >/dev/null 2>&1; then \
	  echo "installing Debian packages 'buildah', 'mmdebstrap' and 'uidmap' (make image-test)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends buildah mmdebstrap uidmap >/dev/null; \
	fi
	@buildah --version

# The msprof-analyze comparison runs in .venv-bench, which has the `bench` extra (msprof-analyze);
# the other benches run in the test venv.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed-stamp: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[bench]'
	touch $@

# Every bench script, bounded (each under `timeout`; the whole run under 15 minutes on 2 cores),
# loopback only; each writes its figures as JSON into $(BENCH_OUT), and bench/results.py
# rewrites bench/RESULTS.md from them. Durations: BENCH_POLL_S (polling window, 2 min),
# BENCH_LOAD_S (per 100-client load scenario: 60 s, as the hardening issue asks),
# BENCH_LOAD_1_S (per 1-client scenario).
BENCH_OUT    ?= .bench-out
BENCH_POLL_S ?= 120
BENCH_LOAD_S ?= 60
BENCH_LOAD_1_S ?= 30
bench: $(STAMP) $(BENCH_VENV)/.installed-stamp
	@rm -rf $(BENCH_OUT) && mkdir -p $(BENCH_OUT)
	@$(BIN)/python -c 'import json, os; print(json.dumps({"load_average": os.getloadavg()}))' \
	  > $(BENCH_OUT)/machine_before.json
	@start=$$(date +%s); \
	if [ -f bench/calls_bench.py ]; then echo "== bench/calls_bench.py"; \
	  timeout 120 $(BIN)/python bench/calls_bench.py --minutes 60 --json $(BENCH_OUT)/calls.json || echo "calls_bench FAILED"; fi; \
	echo "== bench/dcmi_bench.py"; \
	timeout 170 $(BIN)/python bench/dcmi_bench.py --minutes 10 --json $(BENCH_OUT)/dcmi.json || echo "FAILED: dcmi"; \
	echo "== bench/simulator_bench.py"; \
	timeout 120 $(BIN)/python bench/simulator_bench.py --runs 5 --json $(BENCH_OUT)/simulator.json || echo "FAILED: simulator"; \
	echo "== bench/collect_bench.py"; \
	timeout 300 $(BIN)/python bench/collect_bench.py --runs 3 --json $(BENCH_OUT)/collect.json || echo "FAILED: collect"; \
	echo "== bench/daemon_bench.py"; \
	timeout 360 $(BIN)/python bench/daemon_bench.py --seconds $(BENCH_POLL_S) \
	  --json $(BENCH_OUT)/daemon.json || echo "FAILED: daemon"; \
	echo "== bench/load_bench.py (1 client)"; \
	timeout 240 $(BIN)/python bench/load_bench.py --seconds $(BENCH_LOAD_1_S) --scrapers 1 \
	  --scenario plain --scenario tls_auth --scenario npu_smi_hang --json $(BENCH_OUT)/load_1.json || echo "FAILED: load_1"; \
	echo "== bench/load_bench.py (100 clients)"; \
	timeout 420 $(BIN)/python bench/load_bench.py --seconds $(BENCH_LOAD_S) --scrapers 100 \
	  --scenario plain --scenario tls_auth --scenario npu_smi_hang --scenario default_40 \
	  --json $(BENCH_OUT)/load_100.json || echo "FAILED: load_100"; \
	echo "== bench/network_render_bench.py"; \
	timeout 120 $(BIN)/python bench/network_render_bench.py --runs 200 \
	  --json $(BENCH_OUT)/network_render.json || echo "FAILED: network_render"; \
	echo "== bench/readpath_bench.py"; \
	timeout 240 $(BIN)/python bench/readpath_bench.py --seconds $(BENCH_POLL_S) \
	  --json $(BENCH_OUT)/readpath.json || echo "FAILED: readpath"; \
	echo "== bench/fuzz_edge_bench.py"; \
	timeout 300 $(BIN)/python bench/fuzz_edge_bench.py --examples 2000 --json $(BENCH_OUT)/fuzz.json || echo "FAILED: fuzz"; \
	echo "== bench/flood_bench.py"; \
	timeout 720 $(BIN)/python bench/flood_bench.py --seconds 15 --idle-seconds 60 \
	  --json $(BENCH_OUT)/flood.json || echo "FAILED: flood"; \
	echo "== bench/series_bench.py"; \
	timeout 900 $(BIN)/python bench/series_bench.py --json $(BENCH_OUT)/series.json || echo "FAILED: series"; \
	echo "== bench/image_bench.py"; \
	timeout 600 $(BIN)/python bench/image_bench.py --json $(BENCH_OUT)/image.json || echo "FAILED: image"; \
	echo "== bench/align_bench.py"; \
	timeout 120 $(BIN)/python bench/align_bench.py --json $(BENCH_OUT)/align.json || echo "FAILED: align"; \
	echo "== bench/analysis_bench.py"; \
	timeout 420 $(BIN)/python bench/analysis_bench.py --runs 3 --json $(BENCH_OUT)/analysis.json || echo "FAILED: analysis"; \
	echo "== bench/advisor_bench.py"; \
	timeout 300 $(BENCH_VENV)/bin/python bench/advisor_bench.py --runs 3 --timeout 45 \
	  --json $(BENCH_OUT)/advisor.json || echo "FAILED: advisor"; \
	echo "$$(( $$(date +%s) - start )) s" > $(BENCH_OUT)/wall.txt; \
	$(BIN)/python -c 'import json, os; print(json.dumps({"load_average": os.getloadavg()}))' \
	  > $(BENCH_OUT)/machine_after.json
	$(BIN)/python bench/results.py $(BENCH_OUT) --output bench/RESULTS.md

# The demo: an 8x910B simulated node (load that moves, a chip that overheats and clocks down,
# a chip that turns Alarm, an idle-but-allocated chip), served on $(LISTEN) (:$(PORT)).
# Everything lives in $(DEMO) (DEMO=... picks another folder): the config, with its paths
# made absolute ($(DEMO)/npumon.yaml from config/demo.yaml), the pid files, logs and state.
# A failed start stops what it started (demo-stop). DEMO_WAIT: seconds it may take to serve.
DEMO_DIR = $(abspath $(DEMO))
DEMO_UNDO = { $(MAKE) --no-print-directory demo-stop DEMO=$(DEMO) >/dev/null; exit 1; }
demo: $(STAMP)
	@mkdir -p $(DEMO)
	@sed -e 's#\.demo/#$(DEMO_DIR)/#g' config/demo.yaml > $(DEMO)/npumon.yaml || $(DEMO_UNDO)
	@# a simulated training job for the profiler: $(DEMO)/npumon.yaml targets it by its
	@# --dynamic-config-dir, which is this demo's own folder (no other job on the host matches)
	@if [ -f $(DEMO)/train.pid ] && kill -0 $$(cat $(DEMO)/train.pid) 2>/dev/null; then :; else \
	  PROFILING_MODE=dynamic nohup $(BIN)/npumon-sim-train --profile conversion_bound \
	    --step-seconds 0.5 --dynamic-config-dir $(DEMO_DIR)/train \
	    > $(DEMO)/train.log 2>&1 & echo $$! > $(DEMO)/train.pid; \
	fi
	@# a fake kubelet (pod-resources on a unix socket) with the scenario's pods
	@if [ -f $(DEMO)/kubelet.pid ] && kill -0 $$(cat $(DEMO)/kubelet.pid) 2>/dev/null; then :; else \
	  nohup $(BIN)/npumon-sim-kubelet --scenario 910b-8 --socket $(DEMO_DIR)/kubelet.sock \
	    > $(DEMO)/kubelet.log 2>&1 & echo $$! > $(DEMO)/kubelet.pid; \
	fi
	@if [ -f $(DEMO)/npumon.pid ] && kill -0 $$(cat $(DEMO)/npumon.pid) 2>/dev/null; then \
	  echo "demo already running (pid $$(cat $(DEMO)/npumon.pid)); 'make demo-stop' stops it"; \
	else \
	  nohup $(BIN)/npumon run --config $(DEMO)/npumon.yaml --web.listen-address $(LISTEN) \
	    > $(DEMO)/npumon.log 2>&1 & echo $$! > $(DEMO)/npumon.pid; \
	  $(BIN)/python -m tests.helpers.waitfor $$(cat $(DEMO)/npumon.pid) $(DEMO)/npumon.log $(PORT) $(DEMO_WAIT) \
	    || $(DEMO_UNDO); \
	fi
	@echo ""
	@echo "npumon demo is running against the simulated 8x910B node (pid $$(cat $(DEMO)/npumon.pid))."
	@echo "  metrics:  http://127.0.0.1:$(PORT)/metrics"
	@echo "  landing:  http://127.0.0.1:$(PORT)/"
	@echo "  health:   http://127.0.0.1:$(PORT)/-/healthy   (PORT=... picks another port)"
	@echo "  log:      $(DEMO)/npumon.log"
	@echo "  training: simulated job pid $$(cat $(DEMO)/train.pid), profiled every 2 minutes"
	@echo "            (npu_step_duration_seconds, npu_profile_bottleneck{workload=\"demo-train\"})"
	@echo "  pods:     fake kubelet pid $$(cat $(DEMO)/kubelet.pid) (npu_chip_allocation_info)"
	@echo "  one shot: $(BIN)/npumon collect --once --config $(DEMO)/npumon.yaml"
	@echo "  reload:   kill -HUP $$(cat $(DEMO)/npumon.pid)   (after editing $(DEMO)/npumon.yaml)"
	@echo "  stop:     make demo-stop"

demo-stop:
	@for name in npumon train kubelet; do \
	  if [ -f $(DEMO)/$$name.pid ]; then kill $$(cat $(DEMO)/$$name.pid) 2>/dev/null || true; \
	    rm -f $(DEMO)/$$name.pid; fi; \
	done; echo stopped

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info
