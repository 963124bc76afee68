"""rlark-sim lives in sandbox/ (not part of the collection): put it on sys.path for its unit tests."""

import os
import sys

SANDBOX = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "sandbox"
)
if SANDBOX not in sys.path:
    sys.path.insert(0, SANDBOX)
