"""Imports shared by the checkpoint-gate integration tests: the test-only tree generator and the core."""

import os
import sys

from helpers import ROOT, ensure_collection_link

ensure_collection_link()
for path in (os.path.join(ROOT, "tests", "unit", "checkpoint"), os.path.join(ROOT, ".build", "collections")):
    if path not in sys.path:
        sys.path.insert(0, path)

import ckpt_fixtures as F  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity, siblings  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import S3Source  # noqa: E402
from s3_support import s3_client  # noqa: E402

__all__ = ["F", "GateError", "LocalSource", "S3Source", "integrity", "run_gate", "s3_client", "siblings"]
