"""The sandbox's node fleet as the tests expect it (not a test module): one place for its shape and size.

(cluster, node) -> (phase, cordoned, pool). dual-01 is a node of two clusters: its two entries are two Node
objects of the control plane.
"""

EXPECTED_FLEET = {
    ("rlark-a100", "a100-01"): ("Online", False, "head"),
    ("rlark-a100", "a100-02"): ("Online", False, "rollout"),
    ("rlark-a100", "a100-03"): ("Online", False, "rollout"),
    ("rlark-a100", "dual-01"): ("Online", False, "spare"),
    ("rlark-h100", "h100-01"): ("Online", False, "h100"),
    ("rlark-h100", "h100-02"): ("Offline", False, "h100"),
    ("rlark-h100", "dual-01"): ("Offline", True, "spare"),
    ("rlark-edge", "robot-01"): ("Online", False, "robot"),
    ("rlark-edge", "edge-01"): ("Online", False, "edge"),
}
FLEET_SIZE = len(EXPECTED_FLEET)
