# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the log sources: which data-plane cluster each pod of a Job runs in."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.joblogs import clusters_of
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def log_clusters(resource):
    return clusters_of(plain(resource))


class FilterModule:
    def filters(self):
        return {"log_clusters": log_clusters}
