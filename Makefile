# The two commands of the README: `make demo` and `make test`. Everything they need is set up here:
# the venv (.venv, git-ignored) and the control-plane binaries (built once into ~/.cache/nodemedic).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

# hack/ is the package `hack`: its scripts run as modules from the repository root (`python -m hack.bench.chain`),
# so `hack.kcp`, `agent` and `tests` resolve from this checkout as they do in the tests (hack/cluster does the same).

.PHONY: demo test setup build lint unit e2e package bench-cluster bench-remediator bench-remediator-memory bench-agent bench-agent-npd bench-agent-npd-node bench-plan bench-steady bench-affinity bench-descheduler bench-chain bench-repair bench-dark bench-healthz bench-stream

# BENCH_ARGS: appended to a bench target's command line (the last of a repeated option wins), e.g. a smaller size:
# `make bench-plan BENCH_ARGS="--nodes 500 --pods 15000"`; tests/e2e/test_bench_targets.py runs each so.
BENCH_ARGS ?=

# The demo builds only what it runs (the control plane, kubectl, Karpenter); `make build` builds everything.
demo: setup
	$(BIN)/python hack/cluster build --demo
	$(BIN)/python -m hack.demo

# pytest-xdist workers for the tests: chosen from measurements on 2 cores (README, "Tests").
WORKERS ?= 3

# Build, then lint and every test side by side (hack/test.py says how), then a table of where the time went.
test: setup
	$(BIN)/python -m hack.test --workers $(WORKERS)

setup: $(VENV)/.installed

# The runtime dependencies at exactly the versions the image ships (requirements.lock, a constraints file here),
# then the project itself and its dev tools: the tests run on what the Dockerfile installs.
$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c requirements.lock -e '.[dev]'
	touch $@

build: setup
	$(BIN)/python hack/cluster build

lint: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

unit: setup
	$(BIN)/python -m pytest tests/unit -n auto

e2e: build
	$(BIN)/python -m pytest tests/e2e -n $(WORKERS) --dist loadgroup

# The release artefacts in dist/ (git-ignored): the chart (nodemedic-<version>.tgz), the sdist and wheel, and the
# image's docker-archive (hack/package.py says more). The release workflow makes the same from a tag.
package: setup
	$(BIN)/python hack/cluster build --only debian --only helm --only image
	$(BIN)/python -m hack.package --out dist

bench-cluster: build
	$(BIN)/python -m hack.bench.cluster_up $(BENCH_ARGS)

bench-remediator: build
	$(BIN)/python -m hack.bench.remediator_latency --samples 30 $(BENCH_ARGS)

bench-remediator-memory: build
	$(BIN)/python -m hack.bench.remediator_memory $(BENCH_ARGS)

bench-agent: build
	$(BIN)/python -m hack.bench.agent_alone --samples 50 $(BENCH_ARGS)

bench-agent-npd: build
	$(BIN)/python -m hack.bench.agent_vs_npd --window 120 --samples 30 $(BENCH_ARGS)

# The agent pod (the chart as it ships) and NPD's own DaemonSet and image on the real node: RSS and CPU from their
# cgroups, at steady state. Needs the real node free (hack/kcp/realnode.py).
bench-agent-npd-node: build
	$(BIN)/python -m hack.bench.agent_vs_npd_on_node --seconds 120 $(BENCH_ARGS)

# The kubelet check's healthz probe against a hostile local server (issue 42's smuggling answers): RSS and open
# descriptors at the first and the last run, and how the runs ended.
bench-healthz: setup
	$(BIN)/python -m hack.bench.healthz_smuggling --runs 100 $(BENCH_ARGS)

bench-plan: setup
	$(BIN)/python -m hack.bench.plan_cycle $(BENCH_ARGS)

bench-steady: setup
	$(BIN)/python -m hack.bench.steady_cycle $(BENCH_ARGS)

bench-affinity: setup
	$(BIN)/python -m hack.bench.affinity_search $(BENCH_ARGS)

bench-descheduler: build
	$(BIN)/python -m hack.bench.cycle_vs_descheduler $(BENCH_ARGS)

bench-chain: build
	$(BIN)/python -m hack.bench.chain --runs 10 --strict-runs 3 $(BENCH_ARGS)

# nodemedic's repair ladders beside Kubernetes and Karpenter on the same faults: the kubelet stopped on the real node
# (needs it free: hack/kcp/realnode.py), a persistent condition on a Karpenter node.
bench-repair: build
	$(BIN)/python -m hack.bench.repair $(BENCH_ARGS)

bench-dark: build
	$(BIN)/python -m hack.bench.dark $(BENCH_ARGS)

# A day of workload changes (Alibaba GPU-cluster trace v2023 figures) on Karpenter's nodes, Karpenter alone and with
# nodemedic's engines (issue 41 item 5): about 16 minutes at its default size on 2 cores.
bench-stream: build
	$(BIN)/python -m hack.bench.stream $(BENCH_ARGS)

# Re-render deploy/manifests/ (and the chart's copies of the shipped configs) from deploy/helm/nodemedic.
.PHONY: manifests
manifests: build
	$(BIN)/python -m hack.manifests
