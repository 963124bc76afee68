# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every finding the checkpoint gate can emit, as ``(id, severity, rule)`` rows (docs/findings.md lists them).

The rows live beside their rules (structure, siblings, payloads, the result); this only gathers them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup, gate, payloads, siblings, structure

ALL = structure.RULES + siblings.RULES + payloads.RULES + gate.RULES + backup.RULES
