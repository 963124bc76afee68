# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the checkpoint-directory guard: where a new Job will write (the verdict is rlark_ckpt_dir_decision's)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dir_guard
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def planned_checkpoint_location(job, manifest=None, proof=None, object_storage=None, node=None):
    return dir_guard.planned_location(plain(job), plain(manifest), plain(proof), plain(object_storage), node)


class FilterModule:
    def filters(self):
        return {
            "planned_checkpoint_location": planned_checkpoint_location,
        }
