# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docsite tests (`make docs-check`, part of `make lint`): the site is built once per session."""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def load_hack(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "hack", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def docsite():
    """Path of the built HTML site (.build/docsite/build/html); the build fails on any warning."""
    return load_hack("build_docsite").build(os.path.join(ROOT, ".build", "docsite"))
