# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.rlark.ops`` importable from the checkout (the tree `make collection` builds)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "rlark", "ops")

if not os.path.exists(LINK) and not ROOT.endswith(os.path.join("ansible_collections", "rlark", "ops")):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(ROOT, LINK)
if ROOT.endswith(os.path.join("ansible_collections", "rlark", "ops")):
    # Inside ansible-test's tree the collection root is already importable.
    COLLECTIONS = os.path.dirname(os.path.dirname(os.path.dirname(ROOT)))
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
