# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the checkpoint_gate role: the verdict a checkpoint wait gives (its options: rlark_ckpt_wait_options)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate_summary import summarize as summarize_gate
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def gate_summary(result):
    return summarize_gate(plain(result))


class FilterModule:
    def filters(self):
        return {
            "gate_summary": gate_summary,
        }
