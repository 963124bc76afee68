# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the resume flow: what a resume Job carries and how its copy is reviewed (logic in module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import resume
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def resume_marks(job):
    return resume.resume_marks(plain(job))


class FilterModule:
    def filters(self):
        return {
            "resume_marks": resume_marks,
        }
