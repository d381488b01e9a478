# The two commands of the README: `make demo` and `make test`. Everything they need is set up here:
# the venv (.venv, git-ignored) and the control-plane binaries (built once into ~/.cache/nodemedic).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test setup build lint unit e2e package bench-cluster bench-remediator bench-agent bench-agent-npd bench-agent-npd-node bench-plan bench-descheduler bench-chain bench-repair bench-dark

# The demo builds only what it runs (the control plane, kubectl, Karpenter); `make build` builds everything.
demo: setup
	$(BIN)/python hack/cluster build --demo
	$(BIN)/python hack/demo

# pytest-xdist workers for the tests: chosen from measurements on 2 cores (README, "Tests").
WORKERS ?= 3

# Build, then lint and every test side by side (hack/test says how), then a table of where the time went.
test: setup
	$(BIN)/python hack/test --workers $(WORKERS)

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
	$(BIN)/python hack/package.py --out dist

bench-cluster: build
	$(BIN)/python hack/bench/cluster_up.py

bench-remediator: build
	$(BIN)/python hack/bench/remediator_latency.py --samples 30

bench-agent: build
	$(BIN)/python hack/bench/agent.py --samples 50

bench-agent-npd: build
	$(BIN)/python hack/bench/agent_vs_npd.py --window 120 --samples 30

# The agent pod (the chart as it ships) and NPD's own DaemonSet and image on the real node: RSS and CPU from their
# cgroups, at steady state. Needs the real node free (hack/kcp/realnode.py).
bench-agent-npd-node: build
	$(BIN)/python hack/bench/agent_vs_npd_on_node.py --seconds 120

bench-plan: setup
	$(BIN)/python hack/bench/plan_cycle.py

bench-descheduler: build
	$(BIN)/python hack/bench/cycle_vs_descheduler.py

bench-chain: build
	$(BIN)/python hack/bench/chain.py --runs 10 --strict-runs 3

# nodemedic's repair ladders beside Kubernetes and Karpenter on the same faults: the kubelet stopped on the real node
# (needs it free: hack/kcp/realnode.py), a persistent condition on a Karpenter node.
bench-repair: build
	$(BIN)/python hack/bench/repair.py

bench-dark: build
	$(BIN)/python hack/bench/dark.py

# Re-render deploy/manifests/ (and the chart's copies of the shipped configs) from deploy/helm/nodemedic.
.PHONY: manifests
manifests: build
	$(BIN)/python hack/manifests.py
