# rlark.ops: everything a fresh machine needs is installed by these targets.
#   make demo   the main job (migrate, guarded stop, resume) on the local sandbox
#   make test   lint + sanity + unit + integration (project CRDs; CRD-dependent tests also on upstream's) + quick bench
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
BUILD := .build
COLL_ROOT := $(BUILD)/collections
COLL_LINK := $(COLL_ROOT)/ansible_collections/rlark/ops
SANITY_DIR ?= $(BUILD)/sanity
SANITY_TREE := $(SANITY_DIR)/ansible_collections/rlark/ops
PYTEST_EXIT_DIR := $(BUILD)/pytest-exit
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/$(COLL_ROOT)
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help venv collection sanity-bootstrap sandbox-build sandbox-up sandbox-down sandbox-status \
        checks checks-main checks-side lint ruff ansible-lint galaxy-import docs docs-check java sanity unit requirements-check integration it-playbooks it-api it-upstream integration-upstream \
        test test-under-load molecule demo demo-stop sandbox-free bench bench-quick ee torch-dcp-fixtures clean \
        mutation mutation-quick mutation-report coverage

help:
	@echo "make demo            migrate, guarded stop and resume on the local sandbox"
	@echo "make test            ruff, ansible-lint, ansible-test sanity, unit and integration tests"
	@echo "make requirements-check  pip install -r requirements.txt into a fresh venv must resolve at once (< 180 s)"
	@echo "make sandbox-up      start (or reuse, restarting dead parts) the local RLark sandbox; FRESH=1: an empty one"
	@echo "                     sandbox-down / sandbox-status"
	@echo "make molecule        molecule scenarios (idempotence) against the sandbox"
	@echo "make bench           performance figures (bench/), gathered in bench/results/figures.md"
	@echo "make test-under-load make test with two CPU-burning processes beside it"
	@echo "make coverage        line and branch coverage of plugins/ over the unit and integration suites"
	@echo "make demo-stop       delete the Jobs demo/molecule/bench runs left (frees the sandbox's GPUs)"
	@echo "make docs            the collection's HTML docsite (antsibull-docs) in .build/docsite/build/html"
	@echo "make ee              collection tarball + execution-environment build context (ansible-builder)"
	@echo "make mutation        mutation testing of the safety core (MODULE=plugins/module_utils/x.py for one; slow)"
	@echo "make mutation-quick  mutation testing of the safety-core lines changed since BASE (default main)"
	@echo "make torch-dcp-fixtures  rewrite the gate's test checkpoints with real torch (one venv per version, GiBs)"

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@echo ">> creating $(VENV) and installing requirements-dev.txt"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@

venv: $(VENV)/.installed

# The collection must sit at ansible_collections/rlark/ops for imports and ansible-playbook.
collection: $(COLL_LINK)
$(COLL_LINK):
	@mkdir -p $(dir $@)
	@ln -sfn $(CURDIR) $@

# Needs Go, not the venv: `make test` builds it beside the venv's install.
sandbox-build:
	@bash sandbox/build.sh

sandbox-up: venv collection sandbox-build
	@$(PY) sandbox/sandboxctl.py up $(if $(FRESH),--fresh)

sandbox-down: venv
	@$(PY) sandbox/sandboxctl.py down

sandbox-status: venv
	@$(PY) sandbox/sandboxctl.py status

ruff: venv
	@echo ">> ruff"
	@$(BIN)/ruff check .
	@$(BIN)/ruff format --check .

ansible-lint: venv collection
	@echo ">> ansible-lint (production profile)"
	@$(BIN)/ansible-lint --offline

# Galaxy's own importer on the built tarball (no error; warnings only as listed in .ci/galaxy-importer-allowed.txt).
galaxy-import: venv
	@echo ">> galaxy-importer on the collection tarball"
	@$(PY) hack/galaxy_import.py

# The HTML docsite (antsibull-docs + Sphinx, no warning): .build/docsite/build/html/index.html.
docs: venv collection
	@echo ">> docsite (antsibull-docs, Sphinx)"
	@$(PY) hack/build_docsite.py

# In the lint stage: the docsite is built (tests/docsite/conftest.py) and every module, filter, lookup, role
# entry point and event source must have its page; antsibull-changelog lints and releases the fragments.
docs-check: venv collection
	@echo ">> docsite and changelog (antsibull-docs, antsibull-changelog)"
	$(call run_pytest,docs-check,tests/docsite -q)

# The lint steps, in the two chains of `make checks` (LINT_SIDE: the tarball's and the docsite's checks).
LINT_MAIN := ruff ansible-lint
LINT_SIDE := galaxy-import docs-check
lint: $(LINT_MAIN) $(LINT_SIDE)

# ansible-test only runs inside a real ansible_collections/<ns>/<name> tree: copy the tracked files.
ANSIBLE_TEST_CACHE := $(HOME)/.ansible/test/cache
ANSIBLE_TEST_PIP = $(shell $(PY) -c "import re,ansible_test,os;p=os.path.join(os.path.dirname(ansible_test.__file__),'_internal','python_requirements.py');print(re.search(r\"pip='([0-9.]+)'\",open(p).read()).group(1))")

# ansible-test bootstraps pip in its per-test venvs from a host outside the package registries:
# give it the same pip from PyPI through an offline shim.
sanity-bootstrap: venv
	@mkdir -p $(ANSIBLE_TEST_CACHE)
	@ls $(ANSIBLE_TEST_CACHE)/pip-$(ANSIBLE_TEST_PIP)-*.whl >/dev/null 2>&1 || \
	  $(PY) -m pip download -q --no-deps --only-binary :all: -d $(ANSIBLE_TEST_CACHE) pip==$(ANSIBLE_TEST_PIP)
	@cp hack/get_pip_shim.py $(ANSIBLE_TEST_CACHE)/get_pip_$(subst .,_,$(ANSIBLE_TEST_PIP)).py

sanity: venv sanity-bootstrap
	@echo ">> ansible-test sanity"
	@rm -rf $(SANITY_DIR) && mkdir -p $(SANITY_TREE)
	@git ls-files -co --exclude-standard -z | grep -zv '^sandbox/' | xargs -0 cp --parents -t $(SANITY_TREE)/
	@cd $(SANITY_TREE) && git init -q && git add -A && \
	  $(CURDIR)/$(BIN)/ansible-test sanity --venv --requirements --python 3.11 --color no

# run_pytest NAME ARGS [ENV]: records pytest's exit code so .ci/run can tell "no tests collected" (5),
# and a JUnit report from which .ci/run counts skips against .ci/allowed-skips.txt (the skip budget).
define run_pytest
	@mkdir -p $(PYTEST_EXIT_DIR)
	@set +e; $(3) $(COVERAGE_ENV) $(PY) -m pytest $(2) -rsx --junitxml=$(PYTEST_EXIT_DIR)/$(1).xml; rc=$$?; \
	  echo $$rc > $(PYTEST_EXIT_DIR)/$(1); exit $$rc
endef

# COVERAGE=1 (make coverage): every pytest run and each Python process it starts records coverage of plugins/.
COVERAGE_DIR := $(BUILD)/coverage
COVERAGE_ENV := $(if $(COVERAGE),COVERAGE_PROCESS_START=$(CURDIR)/pyproject.toml COVERAGE_FILE=$(CURDIR)/$(COVERAGE_DIR)/data \
  RLARK_COVERAGE_ROOT=$(CURDIR))

unit: venv collection
	@echo ">> unit tests"
	$(call run_pytest,unit,tests/unit -q)

# Only the fresh-venv install of requirements.txt (part of `make unit`): pip must resolve the ranges at once.
requirements-check: venv collection
	@echo ">> requirements.txt into a fresh venv"
	$(call run_pytest,requirements-check,tests/unit -q -m install)

# The integration suite mostly waits on the sandbox (trainer ticks, grace periods), so it runs as three
# groups in parallel, each on its own sandbox (own apiserver, etcd, S3 server, rlark-sim, fleet).
IT := tests/integration
IT_ALL_PLAYBOOKS := $(sort $(wildcard $(IT)/test_playbook_*.py $(IT)/test_ckpt_gate_*.py))
# Playbook files that run in the upstream group instead (on RLark's own CRDs): the groups' summed test times
# stay close (bench/results/suite-profile.md), so the slowest group sets the suite's wall time.
IT_PLAYBOOKS_UPSTREAM := $(IT)/test_playbook_resume_continuity.py $(IT)/test_playbook_backup.py \
                         $(IT)/test_playbook_people.py
# Files of playbook runs that would otherwise fall to it-api (2026-12-04: the slowest group, 1089 s of tests
# against 852 and 895): the rulebook's stops run in it-playbooks. The fleet-wide stop check went back to it-api
# once the sandbox's apiserver restarts stopped waiting out a graceful shutdown (2026-12-05, 6a7b9ca: the three
# groups then ended within 15-28 s of each other).
IT_API_IN_PLAYBOOKS := $(IT)/test_eda_rulebook.py
# The Job writes' module tests run once, on RLark's own CRDs: the modules' requests do not depend on the CRD set,
# and RLark's CRDs are the ones the writes must pass in production (on the project's they took 172 s of it-api).
IT_API_IN_UPSTREAM := $(IT)/test_job_modules.py
# The lifecycle of a second, isolated sandbox (restart in place, --fresh, down/up; about 55 s) does not depend
# on the CRD set. With it here, the long log lines run in it-api (2026-12-05: it-upstream was the slowest group).
IT_API_IN_UPSTREAM += $(IT)/test_sandbox_lifecycle.py
# Files that mostly wait on rlark-sim's clock (grace periods, trainer steps, restarts) run first in their group,
# while the checks keep both cores busy; run last they left part of a core idle at the end of a warm run.
IT_WAITS_FIRST := $(IT)/test_sim_rlark.py $(IT)/test_sim_fidelity.py $(IT)/test_eda_source.py $(IT)/test_eda_rulebook.py \
                  $(IT)/test_sandbox_data_plane.py $(IT)/test_sandbox_faults.py $(IT)/test_ckpt_gate_sim.py
waits_first = $(filter $(IT_WAITS_FIRST),$(1)) $(filter-out $(IT_WAITS_FIRST),$(1))
IT_PLAYBOOKS := $(call waits_first,$(filter-out $(IT_PLAYBOOKS_UPSTREAM),$(IT_ALL_PLAYBOOKS)) $(IT_API_IN_PLAYBOOKS))
IT_API := $(call waits_first,$(filter-out $(IT_ALL_PLAYBOOKS) $(IT_API_IN_PLAYBOOKS) $(IT_API_IN_UPSTREAM),$(sort $(wildcard $(IT)/test_*.py))))
# What depends on the CRDs themselves (issue: "the same suite passes with the upstream CRDs"):
# the sandbox, rlark-sim and strict rendering; they also run in it-api on the project's.
IT_UPSTREAM := $(call waits_first,$(IT)/test_sandbox_crds.py $(IT)/test_sandbox_infra.py $(IT)/test_sim_rlark.py \
               $(IT)/test_sim_fidelity.py $(IT)/test_render_apiserver.py $(IT)/test_sandbox_data_plane.py \
               $(IT_PLAYBOOKS_UPSTREAM) $(IT_API_IN_UPSTREAM))
IT_STATE := $(CURDIR)/.sandbox/it
# RLARK_CONTROLLER_MANAGER=/path runs RLark's own controller-manager instead of rlark-sim's controller;
# tests of rlark-sim's own options are then deselected by their marker (pytest reports them as deselected).
IT_MARKS := $(if $(RLARK_CONTROLLER_MANAGER),-m "not sim_only")

# ansible-rulebook (tests/integration/test_eda_rulebook.py) runs its Drools engine in a JVM: Java 17+ must be
# there. Found on PATH or JAVA_HOME; else installed with apt-get when this runs as root; else a clear failure.
java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -n "$$v" ] && [ "$$v" -ge 17 ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo ">> installing Java 17 for ansible-rulebook (openjdk-17-jre-headless)"; \
	  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null || exit 1; \
	else echo "make: ansible-rulebook needs Java 17+: install a JDK/JRE 17 (openjdk-17-jre-headless) or put it on PATH" >&2; exit 1; fi

# Each group also writes where its time went (tests/integration/suite_profile.py); hack/suite_profile.py renders it.
PROFILE_DIR := $(BUILD)/suite-profile
integration: venv collection sandbox-build java
	@echo ">> integration tests: 3 groups in parallel on their own sandboxes (each group prints when done)"
	@rm -rf $(PROFILE_DIR) && mkdir -p $(PROFILE_DIR)
	@$(MAKE) --no-print-directory -j3 -O it-playbooks it-api it-upstream

it-playbooks:
	@echo ">> integration: playbooks and checkpoint gate (project CRDs)"
	$(call run_pytest,it-playbooks,$(IT_PLAYBOOKS) -q $(IT_MARKS),RLARK_SANDBOX_DIR=$(IT_STATE)-playbooks RLARK_SUITE_PROFILE=$(CURDIR)/$(PROFILE_DIR)/it-playbooks.jsonl)

it-api:
	@echo ">> integration: sandbox, rlark-sim, modules, rendering (project CRDs)"
	$(call run_pytest,it-api,$(IT_API) -q $(IT_MARKS),RLARK_SANDBOX_DIR=$(IT_STATE)-api RLARK_SUITE_PROFILE=$(CURDIR)/$(PROFILE_DIR)/it-api.jsonl)

it-upstream:
	@echo ">> integration: CRD-dependent suite and some playbooks with RLark's upstream CRDs"
	$(call run_pytest,it-upstream,$(IT_UPSTREAM) -q $(IT_MARKS) --sandbox-crds=upstream,RLARK_SANDBOX_DIR=$(IT_STATE)-upstream RLARK_SUITE_PROFILE=$(CURDIR)/$(PROFILE_DIR)/it-upstream.jsonl)

# The whole suite against the upstream CRDs, serially (by hand; `make test` runs the CRD-dependent part).
integration-upstream: venv collection sandbox-build
	@echo ">> integration tests (upstream RLark CRDs, whole suite)"
	$(call run_pytest,integration-upstream,$(IT) -q $(IT_MARKS) --sandbox-crds=upstream)

# Line and branch coverage of plugins/ over the unit and integration suites (the same runs as make test's, measured):
# the table and .build/coverage/summary.json (hack/coverage_summary.py). Slower than make test: every process traces.
coverage: venv collection sandbox-build java
	@rm -rf $(COVERAGE_DIR) && mkdir -p $(COVERAGE_DIR)
	@$(MAKE) --no-print-directory -j2 COVERAGE=1 unit integration; rc=$$?; \
	  $(PY) hack/coverage_summary.py $(COVERAGE_DIR) || rc=1; exit $$rc

# The checks (lint, sanity, unit tests, quick benches: CPU work) run beside the integration groups (which mostly
# wait on their sandboxes): a warm `make test` takes about as long as the integration part. Both are sub-makes
# that synchronise their own output (each check and each integration group prints as it ends). On a fresh clone
# the venv's install and the sandbox's first Go build (about 10 minutes) start side by side.
test: collection
	@$(MAKE) --no-print-directory -j2 checks integration

# Two chains of checks: with one, under two CPU burners the chain (lint, sanity, unit) ended 1.5-1.8 minutes after
# the integration groups (bench/results/suite-profile.md, 2026-12-05). The tarball's and the docsite's checks are
# the side chain, and only them: once the checks end, the groups alone leave a fifth of a warm run's CPU idle.
checks: venv collection
	@$(MAKE) --no-print-directory -j2 -O checks-main checks-side

checks-main: venv collection
	@$(MAKE) --no-print-directory -j1 $(LINT_MAIN) sanity unit mutation-quick bench-quick

checks-side: venv collection
	@$(MAKE) --no-print-directory -j1 $(LINT_SIDE)

# The suite must pass on a loaded 2-core machine: the same `make test` with two CPU burners beside it
# (stopped by their PIDs when it ends).
test-under-load:
	@bash hack/with_cpu_burners.sh 2 $(MAKE) --no-print-directory test

# Molecule scenarios (extensions/molecule) against the sandbox. Molecule keeps per-scenario state under
# ~/.ansible/tmp: reset it first so an interrupted earlier run cannot make it skip `prepare`.
MOLECULE_SCENARIOS := migrate guarded_stop
molecule: venv collection sandbox-up sandbox-free
	@set -e; for s in $(MOLECULE_SCENARIOS); do \
	  MOLECULE_PROJECT_DIRECTORY=$(CURDIR) $(BIN)/molecule reset -s $$s >/dev/null 2>&1 || true; \
	  echo ">> molecule test -s $$s"; MOLECULE_PROJECT_DIRECTORY=$(CURDIR) $(BIN)/molecule test -s $$s; \
	done

# Entry points (demo, molecule, bench) start from a free sandbox whatever ran before: the Jobs earlier
# demo/molecule/bench runs left (demo-*, molecule-*, bench-*) are deleted first; checkpoints stay.
sandbox-free: venv collection sandbox-up
	@echo ">> sandbox-free: deleting Jobs left by earlier demo, molecule and bench runs (their GPUs are freed)"
	@. .sandbox/env && $(BIN)/ansible-playbook -i examples/sandbox/inventory.yml examples/sandbox/demo_cleanup.yml \
	  >$(BUILD)/sandbox-free.log 2>&1 || { cat $(BUILD)/sandbox-free.log; exit 1; }

# Execution environment: the collection tarball (dist/) and the ansible-builder context (.build/ee).
# With podman or docker, `ansible-builder build -t rlark-ops-ee -f execution-environment.yml` builds the image.
COLL_VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
ee: venv
	@echo ">> collection tarball dist/rlark-ops-$(COLL_VERSION).tar.gz"
	@$(BIN)/ansible-galaxy collection build --force --output-path dist . >/dev/null
	@echo ">> ansible-builder create -> $(BUILD)/ee"
	@$(BIN)/ansible-builder create -f execution-environment.yml -c $(BUILD)/ee >/dev/null
	@echo ">> build the image with: podman build -t rlark-ops-ee:$(COLL_VERSION) -f $(BUILD)/ee/Containerfile $(BUILD)/ee"

# DEMO_STOP=1 make demo: stop (delete) the demo's resumed Job at the end instead of leaving it training.
demo: venv collection sandbox-up
	@DEMO_STOP=$(DEMO_STOP) bash examples/sandbox/demo.sh

demo-stop: sandbox-free

bench: venv collection sandbox-up sandbox-free
	@$(PY) -m pytest bench -q -s

# The benches that need no sandbox (seconds): run by `make test` and CI; figures in bench/results/figures.md.
bench-quick: venv collection
	$(call run_pytest,bench-quick,bench -q -s,RLARK_BENCH_QUICK=1)

# Mutation testing of the safety core (cosmic-ray, hack/mutation.py; bench/results/mutation.md). A whole run
# takes hours, so `make test` runs only the quick mode. MODULE=plugins/module_utils/selectors.py runs one
# module; RETEST=1 re-runs only that module's survivors (with OPERATOR=core/X also every mutant X made).
# mutation-quick (part of `make test`) mutates only the safety-core lines changed since BASE (merge base
# with HEAD, or with origin/BASE; uncommitted changes included) and fails on a survivor not listed.
MODULE ?=
BASE ?= main
mutation: venv collection
	@nice -n 10 $(PY) hack/mutation.py run $(if $(RETEST),--retest) $(if $(OPERATOR),--operator $(OPERATOR)) $(MODULE)

mutation-quick: venv collection
	@nice -n 10 $(PY) hack/mutation.py run --since $(BASE)

mutation-report: venv
	@$(PY) hack/mutation.py report

# The DCP checkpoints the gate's unit tests read (tests/unit/checkpoint/data/torch-dcp), written by real
# torch on CPU: one venv per torch version (~4-5 GiB each with the CUDA wheels PyPI's torch pulls in),
# so by hand, never by `make test`; commit what it writes.
TORCH_DCP_VERSIONS := 2.6.0 2.11.0 2.15.0
torch-dcp-fixtures:
	@set -e; for v in $(TORCH_DCP_VERSIONS); do \
	  test -x $(BUILD)/torch-$$v/bin/python || $(PYTHON) -m venv $(BUILD)/torch-$$v; \
	  echo ">> torch $$v"; $(BUILD)/torch-$$v/bin/python -m pip install -q torch==$$v numpy; \
	  $(BUILD)/torch-$$v/bin/python hack/write_torch_dcp.py tests/unit/checkpoint/data/torch-dcp; \
	done

clean:
	@rm -rf $(BUILD)
