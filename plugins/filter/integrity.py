# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the checkpoint content-integrity manifest (logic in module_utils.checkpoint.integrity)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def integrity_summary(report):
    return integrity.summary(plain(report))


class FilterModule:
    def filters(self):
        return {"integrity_summary": integrity_summary}
