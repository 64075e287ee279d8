# Everything a fresh machine needs is installed by these targets; each is idempotent.
#   make demo   set up, start the local simulated cluster, run every check once, show heartbeats, page once for
#               an API server outage with its dependants held back
#   make test   set up, then lint, type-check, layer-check and run every test tier
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup system-packages python tools terraform-cli sandbox-binaries demo test lint fmt check hooks catalogue unit \
        functional e2e e2e-kustomize-smoke e2e-kustomize-catalogue bench clean lock lock-upgrade

setup: system-packages python sandbox-binaries tools

# iproute2 gives `ip netns`/veth for the sandbox's proxied backends; patch applies infra/sandbox/go/patches;
# jq runs the KWOK tutorial's reconcile pipeline in `make bench` and GNU time measures its contenders' peak RSS;
# containerd (with runc) is the CRI runtime the process node's real kruise-daemon connects to, and libpfm4-dev (with
# gcc) builds koordlet, whose perf_group package is cgo; the rest builds Go and Python.
system-packages:
	@command -v go >/dev/null || { echo "Go >= 1.26 is required to build the sandbox (it comes with this machine kind)"; exit 1; }
	@missing=""; for cmd in ip:iproute2 patch:patch git:git openssl:openssl npm:npm jq:jq gcc:gcc \
	  containerd:containerd runc:runc; do \
	  command -v "$${cmd%%:*}" >/dev/null || missing="$$missing $${cmd##*:}"; done; \
	test -x /usr/bin/time || missing="$$missing time"; \
	test -f /usr/include/perfmon/pfmlib.h || missing="$$missing libpfm4-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

# The product and the sandbox (its own distribution, infra/sandbox, needed by demo and the tests).
# compat mode puts each source root on sys.path with a plain .pth (not an import hook), so mypy
# and other static tools resolve outpost_sandbox from the tests too.
$(STAMP): pyproject.toml infra/sandbox/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]' -e infra/sandbox --config-settings editable_mode=compat
	touch $(STAMP)

python: $(STAMP)

# The Serverless Framework (v3), used to prove serverless.yml packages what `outpost package` generates.
.tools/node_modules/.bin/serverless:
	mkdir -p .tools
	cd .tools && npm install --silent --no-fund --no-audit --no-save serverless@3 >/dev/null

tools: system-packages .tools/node_modules/.bin/serverless

# The Terraform CLI formats and checks infra/gcp in the functional tests (no provider is downloaded). It is part of
# the machine image (/usr/local/bin/terraform) and has no package in the registries this project reaches, so it is
# checked, not installed: without it the tests that need it would fail, and this says why before they run.
terraform-cli:
	@command -v terraform >/dev/null || test -x /usr/local/bin/terraform || { \
	  echo "the terraform CLI is missing (expected on PATH or at /usr/local/bin/terraform, from the machine image):" \
	       "tests/functional/test_gcp_deployment.py needs it for terraform fmt -check on infra/gcp"; exit 1; }

# Go builds of etcd, kube-apiserver, controller-manager, scheduler, kubectl, kwok, the real managers and node agents
# (kruise-manager, kruise-daemon; koord-manager, koord-scheduler, koord-descheduler, koordlet, from their release
# zips), and the Lambda Runtime
# Interface Emulator the e2e tests run the Lambda bundle behind, into a cache outside the repo (~/.cache/outpost);
# a no-op when the pinned versions are already built (cold: about 13 min on 2 cores).
sandbox-binaries: system-packages
	infra/sandbox/go/build.sh >/dev/null

demo: setup
	$(BIN)/outpost demo

# mypy --strict runs twice: the package, functions/ and the other test tiers ([tool.mypy] in pyproject.toml), then
# tests/e2e with its own directory first on the path (its conftest is a second module named `conftest`).
lint: python
	$(BIN)/ruff format --check shared functions tests infra/sandbox
	$(BIN)/ruff check shared functions tests infra/sandbox
	$(BIN)/mypy
	MYPYPATH=tests/e2e $(BIN)/mypy tests/e2e
	$(BIN)/mypy --config-file infra/sandbox/pyproject.toml
	$(BIN)/lint-imports
	$(BIN)/lint-imports infra/sandbox/pyproject.toml

# The inner loop, under a minute on 2 cores: lint (formatting included) and the unit tests, spread over every core
# (pytest-xdist). The pre-commit hook runs it.
check: lint
	$(BIN)/pytest -q -n auto tests/unit

fmt: python
	$(BIN)/ruff format shared functions tests infra/sandbox
	$(BIN)/ruff check --fix shared functions tests infra/sandbox

# The dependency locks every bundle installs from (infra/locks/, one per target; what they hold:
# shared/outpost/tooling/packaging/locks.py), compiled by uv from pyproject.toml (outpost.tooling.lock_writer): after
# changing its dependencies or extras, run this and commit both (a stale lock fails `outpost package` and the unit
# tests). It keeps the locked pins pyproject.toml still allows; lock-upgrade takes the newest releases it allows.
lock: python
	$(BIN)/python -m outpost.tooling.lock_writer

lock-upgrade: python
	$(BIN)/python -m outpost.tooling.lock_writer --upgrade

# Every file that lists the checks (docs/checks.md's tables and sections, functions/<check>/main.py, the example
# environments' entries, the RBAC golden file), written from the registry; `make check` fails until it is run.
catalogue: python
	$(BIN)/python -m outpost.tooling.catalogue

# The pre-commit hook (.githooks/pre-commit runs `make check`), once per clone.
hooks:
	git config core.hooksPath .githooks

unit: python
	$(BIN)/pytest -n auto tests/unit

functional: python terraform-cli
	$(BIN)/pytest tests/functional

e2e: setup
	$(BIN)/pytest tests/e2e

# The kustomize smoke: the other install path (upstream's config/ rather than the official charts, which every other
# e2e test runs on) in a sandbox of its own, once the first is down: `run --all` all ok, and caught, the faults that
# meet what config/ sets otherwise: every manager killed (its webhooks' failurePolicy and namespace selectors, its
# Lease, its flags), the two serving managers frozen (their probes), and the real node agents killed (config/ runs
# them with every alpha and beta feature gate). A Lease stolen, a manager scaled to 0 and koordlet frozen touch
# only objects those already prove; the whole catalogue on config/ is `make e2e-kustomize-catalogue`.
KUSTOMIZE_SMOKE := tests/e2e/test_catalogue_e2e.py tests/e2e/test_fault_catalogue_e2e.py \
  -k "run_all or manager-down or manager-frozen or koordlet-down or kruise-daemon-down"

e2e-kustomize-smoke: setup
	OUTPOST_SANDBOX_INSTALL=kustomize $(BIN)/pytest $(KUSTOMIZE_SMOKE)

e2e-kustomize-catalogue: setup
	OUTPOST_SANDBOX_INSTALL=kustomize $(BIN)/pytest tests/e2e/test_catalogue_e2e.py tests/e2e/test_fault_catalogue_e2e.py

# The unit tests share nothing and run on every core; the functional and e2e tiers share local servers and one
# sandbox, and run in one process; then the kustomize smoke. Set-up runs its parts side by side (the Go build beside
# the venv and npm). The slowest tests are listed, to keep a fresh machine's run under the hour.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target setup terraform-cli
	$(MAKE) --no-print-directory lint
	$(BIN)/pytest -n auto tests/unit
	$(BIN)/pytest --durations=25 tests/functional tests/e2e
	OUTPOST_SANDBOX_INSTALL=kustomize $(BIN)/pytest --durations=10 $(KUSTOMIZE_SMOKE)

# The benchmark (tests/bench/run.py): one sandbox (5,000 nodes by default), every figure side by side; e.g.
# `make bench ARGS="--nodes 100 --growth 100"` for a quick run.
bench: setup
	PYTHONPATH=tests $(BIN)/python -m bench.run $(ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info infra/sandbox/build infra/sandbox/*.egg-info
