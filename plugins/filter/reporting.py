# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that make data safe and readable for records and messages: redaction, findings tables, stable YAML."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.module_utils import findings as findings_core
from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils import redact as redact_core
from ansible_collections.rlark.ops.plugins.module_utils import review as review_core


def redact(data):
    """A copy of ``data`` with secrets masked by key name and value shape."""
    return redact_core.redact(manifest_io.to_plain(data))


def findings_table(findings, title="findings"):
    """Findings as a readable fixed-width text table."""
    if not isinstance(findings, list):
        raise AnsibleFilterError("findings_table expects a list of findings")
    return findings_core.table(
        review_core.safe([f for f in manifest_io.to_plain(findings) if isinstance(f, dict)]), title
    )


def stable_yaml(data):
    """Redacted YAML text with stable key order (byte-identical for the same data)."""
    return manifest_io.dump_yaml(redact_core.redact(manifest_io.to_plain(data)))


class FilterModule:
    def filters(self):
        return {"redact": redact, "findings_table": findings_table, "stable_yaml": stable_yaml}
