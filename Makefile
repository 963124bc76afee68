# rlark.ops: everything a fresh machine needs is installed by these targets.
#   make demo   the main job (migrate, guarded stop, resume) on the local sandbox
#   make test   lint + sanity + unit + integration (both CRD sets)
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
        lint ruff ansible-lint sanity unit integration integration-upstream test demo bench clean

help:
	@echo "make demo            migrate, guarded stop and resume on the local sandbox"
	@echo "make test            ruff, ansible-lint, ansible-test sanity, unit and integration tests"
	@echo "make sandbox-up      start (or reuse) the local RLark sandbox; sandbox-down / sandbox-status"
	@echo "make bench           performance figures (bench/)"

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

sandbox-build: venv
	@bash sandbox/build.sh

sandbox-up: venv collection sandbox-build
	@$(PY) sandbox/sandboxctl.py up

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

lint: ruff ansible-lint

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
	@git ls-files -co --exclude-standard -z | grep -zv '^sandbox/' | xargs -0 -I{} cp --parents {} $(SANITY_TREE)/
	@cd $(SANITY_TREE) && git init -q && git add -A && \
	  $(CURDIR)/$(BIN)/ansible-test sanity --venv --requirements --python 3.11 --color no

define run_pytest
	@mkdir -p $(PYTEST_EXIT_DIR)
	@set +e; $(PY) -m pytest $(2); rc=$$?; echo $$rc > $(PYTEST_EXIT_DIR)/$(1); exit $$rc
endef

unit: venv collection
	@echo ">> unit tests"
	$(call run_pytest,unit,tests/unit -q)

integration: venv collection sandbox-build
	@echo ">> integration tests (project CRDs)"
	$(call run_pytest,integration,tests/integration -q)

integration-upstream: venv collection sandbox-build
	@echo ">> integration tests (upstream RLark CRDs)"
	$(call run_pytest,integration-upstream,tests/integration -q --sandbox-crds=upstream)

test: lint sanity unit integration integration-upstream

demo: venv collection sandbox-up
	@bash examples/sandbox/demo.sh

bench: venv collection sandbox-build
	@$(PY) -m pytest bench -q -s

clean:
	@rm -rf $(BUILD)
