# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that find a Job's checkpoints and name its steps (logic in module_utils: checkpoint.location, hydra)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import hydra
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import location
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def checkpoint_location(resource, manifest=None, root=None, object_storage=None):
    return location.locate(plain(resource), plain(manifest), root or None, plain(object_storage))


def checkpoint_step_number(path):
    return hydra.step_number(path)


def without_resume_override(job):
    return location.without_resume_override(plain(job))


def hydra_overrides(script):
    return location.hydra_overrides(script)


class FilterModule:
    def filters(self):
        return {
            "checkpoint_location": checkpoint_location,
            "checkpoint_step_number": checkpoint_step_number,
            "without_resume_override": without_resume_override,
            "hydra_overrides": hydra_overrides,
        }
