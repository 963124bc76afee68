# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the checkpoint-directory guard: where a new Job will write, and who wrote there already."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dir_guard
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def planned_checkpoint_location(job, manifest=None, proof=None, object_storage=None, node=None):
    return dir_guard.planned_location(plain(job), plain(manifest), plain(proof), plain(object_storage), node)


def checkpoint_reuse_findings(steps, location, job_name, allowed=False):
    return dir_guard.reuse_findings(job_name, plain(steps) or [], plain(location), bool(allowed))


class FilterModule:
    def filters(self):
        return {
            "planned_checkpoint_location": planned_checkpoint_location,
            "checkpoint_reuse_findings": checkpoint_reuse_findings,
        }
