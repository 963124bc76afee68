"""The shared sandbox for benches that play playbooks on it (tests/integration's Sandbox, loaded by path).

bench/conftest.py shadows tests/integration/conftest.py on ``import conftest``, so that file is
loaded under its own module name here.
"""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTEGRATION = os.path.join(ROOT, "tests", "integration")
if INTEGRATION not in sys.path:
    sys.path.insert(0, INTEGRATION)


def _integration_conftest():
    spec = importlib.util.spec_from_file_location("integration_conftest", os.path.join(INTEGRATION, "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shared_sandbox():
    """The sandbox of this checkout (started when down), with the collection linked."""
    from helpers import ensure_collection_link

    support = _integration_conftest()
    state_dir = os.path.abspath(os.environ.get("RLARK_SANDBOX_DIR") or os.path.join(ROOT, ".sandbox"))
    started = support.sandboxctl(state_dir, "up")
    assert started.returncode == 0, started.stdout + started.stderr
    ensure_collection_link()
    return support.Sandbox(state_dir)
