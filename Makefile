# One-command entry points for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test lint typecheck unit manifests demo bench chaos clean compiled test-compiled promtool

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,sim]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check scheduler muster_sim tests bench
	$(BIN)/ruff format --check scheduler muster_sim tests bench

typecheck: venv
	$(BIN)/mypy scheduler muster_sim

# Two workers, each running whole test files (the e2e files start their own sim and
# scheduler processes, and a file's fixtures are shared by its tests).
unit: venv promtool
	$(BIN)/pytest tests --ignore=tests/manifests -n 2 --dist loadfile

# promtool and prometheus (Debian's prometheus package) run the alerts' cases
# (tests/monitoring) and the alerting e2e test (tests/e2e/test_alerts.py). Where they are
# missing, root installs the package with apt-get; otherwise those tests are skipped.
promtool:
	@command -v promtool >/dev/null 2>&1 \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	       && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	            prometheus >/dev/null 2>&1 && command -v promtool >/dev/null; } \
	  || echo "promtool: not installed (apt-get install prometheus): the alert tests will be skipped"

test: lint typecheck unit test-compiled manifests

# The image runs the scheduling core compiled with mypyc (scheduler/build.py lists the
# modules, setup.py compiles them). A copy of the tree in $(COMPILED) is compiled in place, so
# the sources here stay plain Python and an edit never hides behind a stale extension module.
# test-compiled runs the core's unit tests against that copy and checks that it makes the
# same decisions as plain Python on the bench's workloads (bench/decisions.py).
COMPILED := build/compiled
CORE_TESTS := tests/unit/api tests/unit/framework tests/unit/actions tests/unit/plugins tests/unit/nodefit tests/unit/dra

compiled: venv
	rm -rf $(COMPILED) && mkdir -p $(COMPILED)
	cp -r scheduler muster_sim tests bench crds docs setup.py pyproject.toml README.md $(COMPILED)/
	find $(COMPILED) -name __pycache__ -prune -exec rm -rf {} +
	cd $(COMPILED) && MUSTER_COMPILE=1 $(CURDIR)/$(BIN)/python setup.py --quiet build_ext --inplace >/dev/null

test-compiled: compiled
	cd $(COMPILED) && MUSTER_EXPECT_COMPILED=1 $(CURDIR)/$(BIN)/pytest -p no:cacheprovider $(CORE_TESTS)
	$(BIN)/python bench/decisions.py --expect plain > $(COMPILED)/decisions.plain
	cd $(COMPILED) && PYTHONPATH=. $(CURDIR)/$(BIN)/python bench/decisions.py --expect compiled > decisions.compiled
	diff $(COMPILED)/decisions.plain $(COMPILED)/decisions.compiled

demo: venv
	$(BIN)/muster demo

# A few minutes: sim, a binding ceiling, a naive first-fit loop and muster, side by side;
# muster runs its core compiled, as the image does (--core plain for the checkout's Python).
bench: compiled
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/cluster_bench.py --nodes 1000 --pods 10000 --gang 8-64 --repeat 2 --core compiled

# The reliability campaign's long mode (bench/chaos.py, about 1.5 hours): ten seeded trials of
# kills, pauses and sim faults, 10,000 fuzzed objects and an hour's soak; the figures go to
# bench/out/chaos.json. `make test` runs its short mode (tests/e2e/test_chaos.py). SEED=n
# replays a campaign.
chaos: venv
	$(BIN)/python bench/chaos.py --long $(if $(SEED),--seed $(SEED))

# The container image and deploy/: every YAML parses; the rendered kustomizations
# validate against the Kubernetes schemas offline; `kubectl apply --dry-run=client`
# succeeds; the RBAC is exactly what the code uses; checkov finds nothing
# (tests/manifests/). kubectl comes from the machine; where it is missing, Debian's
# kubernetes-client is tried, and failing that the kubectl steps are skipped.
MANIFEST_STAMP := $(VENV)/.installed-manifests
CHECKOV_VENV := .venv-checkov
# checkov pins dozens of packages (an older `packaging`, boto3, networkx...): in its
# own venv it can neither break the project's venv nor be broken by it.
CHECKOV_SPEC := checkov>=3.2,<4

$(MANIFEST_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,sim,manifests]'
	touch $@

$(CHECKOV_VENV)/.installed: Makefile
	test -d $(CHECKOV_VENV) || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet '$(CHECKOV_SPEC)'
	touch $@

manifests: $(MANIFEST_STAMP) $(CHECKOV_VENV)/.installed
	@command -v kubectl >/dev/null 2>&1 \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	       && apt-get install -y -qq kubernetes-client >/dev/null 2>&1 && command -v kubectl >/dev/null; } \
	  || echo "manifests: no kubectl (and Debian's kubernetes-client could not be installed): the kubectl checks will be skipped"
	$(BIN)/pytest tests/manifests

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .pytest_cache .mypy_cache .ruff_cache

# The container image (Dockerfile). `make image` builds it as $(IMAGE): `docker build` where a
# Docker engine answers, else buildah on a local stand-in for the base image (tests/image/build.sh
# and base.sh say how, and how the stand-in differs). `make image-test` builds it and runs
# tests/image: its config against deploy/ and pyproject.toml, `--version` on a read-only root as
# UID 65532, no test bench in it (`muster sim` and `muster demo` say how to get them), and the
# scheduler and controller as their pods run them, against a strict `muster sim` run from this
# checkout's venv with deploy/'s RBAC. It fails, rather than skips, without an engine.
IMAGE ?= muster:dev

.PHONY: image image-test

image:
	tests/image/build.sh $(IMAGE)

image-test: venv image
	MUSTER_IMAGE=$(IMAGE) $(BIN)/pytest tests/image
