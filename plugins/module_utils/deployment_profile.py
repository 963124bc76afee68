# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the admin recorded in a deployment profile, read in one place (rlark_node_match, the expected_nodes filter).

Plain Python, no imports: filters load it in every play.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def expected_nodes(profile):
    """Task name -> the admin's recorded global match list (``roles[].global_matches[].name``) of a deployment
    profile; a role without ``global_matches`` records nothing."""
    out = {}
    for role in (profile or {}).get("roles") or []:
        if isinstance(role, dict) and role.get("name") and role.get("global_matches") is not None:
            out[role["name"]] = [m.get("name") if isinstance(m, dict) else m for m in role["global_matches"]]
    return out
