# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secret values in env items and anywhere else in the records or the Job."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact, secret_reason
from ansible_collections.rlark.ops.plugins.module_utils.review.values import as_dict, as_list, as_text

SECRETS_HINT = (
    "Put the value in a Kubernetes Secret and reference it in the launch manifest instead: give the env item "
    "a 'secret' mapping with the Secret's name and key in place of 'value' (it renders valueFrom.secretKeyRef); "
    "never put the value itself in the manifest or the Job."
)


def env_secret_findings(env, path):
    found = []
    for index, item in enumerate(as_list(env)):
        item = as_dict(item)
        name, here = as_text(item.get("name")), "%s[%d]" % (path, index)
        if "valueFrom" in item or "secret" in item:
            continue
        reason = secret_reason(name, item.get("value"))
        if not reason:
            continue
        found.append(
            finding(
                "env-secret",
                "Environment variable %s carries a literal value and %s; the console writes env values into "
                "the pod template in clear text." % (name or "(unnamed)", reason),
                path=here,
                hint=SECRETS_HINT,
            )
        )
    return found


def inline_secret_findings(data, prefix, skip=()):
    """Every value ``redact`` would mask (outside the env values in ``skip``): the review and the
    redaction share one definition, so clean records are never altered by redaction."""
    found = []

    def walk(node, masked, path):
        if path in skip:
            return
        if isinstance(node, dict) and isinstance(masked, dict):
            for k, v in node.items():
                walk(v, masked.get(k), manifest_io.field_path([k], path))
        elif isinstance(node, list) and isinstance(masked, list) and len(node) == len(masked):
            for i, v in enumerate(node):
                walk(v, masked[i], "%s[%d]" % (path, i))
        elif node != masked:
            found.append(
                finding(
                    "inline-secret",
                    "The value at %s looks like a credential (by its name or shape); records and Jobs must not "
                    "carry secrets." % path,
                    path=path,
                    hint=SECRETS_HINT,
                )
            )

    walk(data, redact(data), prefix)
    return found
