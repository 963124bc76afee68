# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared inputs of the migration tests: the two example record pairs, loaded fresh each time."""

import copy
import json
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
EXAMPLES = os.path.join(ROOT, "examples")
_CACHE = {}


def example(name):
    """``(manifest, profile)`` copies of ``examples/<name>/`` (JSON round trip: YAML anchors not shared)."""
    if name not in _CACHE:
        folder = os.path.join(EXAMPLES, name)
        with open(os.path.join(folder, "launch_manifest.yml")) as handle:
            manifest = yaml.safe_load(handle)
        with open(os.path.join(folder, "deployment_profile.yml")) as handle:
            profile = yaml.safe_load(handle)
        _CACHE[name] = (manifest, profile)
    return json.loads(json.dumps(_CACHE[name]))


def role(manifest_or_profile, name):
    return next(r for r in manifest_or_profile["roles"] if r["name"] == name)


def big_manifest(n_roles=16):
    """A clean manifest/profile pair with ``n_roles`` roles (head + workers) for the bench."""
    manifest, profile = example("sandbox")
    base_m, base_p = role(manifest, "rollout"), role(profile, "rollout")
    manifest["roles"] = [role(manifest, "actor")]
    profile["roles"] = [role(profile, "actor")]
    for i in range(1, n_roles):
        m, p = copy.deepcopy(base_m), copy.deepcopy(base_p)
        m["name"] = p["name"] = "rollout%d" % i
        m["env"] = [{"name": "ROLLOUT_INDEX", "value": str(i)}, {"name": "OMP_NUM_THREADS", "value": "8"}]
        p["selector"] = {"rlinf.io/pool": "rollout-%d" % i}
        manifest["roles"].append(m)
        profile["roles"].append(p)
    return manifest, profile
