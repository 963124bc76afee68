# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job labels and annotations from the launch manifest (``job.labels``/``job.annotations``), checked as
Kubernetes checks them, so label selection (scheduled guarded stops) works without ``kubectl label``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rlark.ops.plugins.module_utils.findings import finding

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
# Set by RLark and Kubernetes themselves; a manifest must not fake them.
RESERVED_PREFIXES = ("rlinf.io", "rlark.io", "kubernetes.io", "k8s.io")
HINT = "Fix job.%s in the launch manifest (rlark_launch_manifest)."
# Set by a guarded stop's patch: the run that stopped the Job (a later read tells its stop from anyone else's).
STOPPED_BY_RUN = "rlark.ops/guarded-stop-run"


def key_problem(key):
    """Why ``key`` is not a valid label/annotation key, or None."""
    prefix, _sep, name = str(key).rpartition("/")
    if prefix and (len(prefix) > 253 or not _PREFIX.match(prefix)):
        return "the prefix %r is not a DNS subdomain" % prefix
    if not _NAME.match(name):
        return "the name %r must be 1-63 letters, digits, '-', '_' or '.', starting and ending alphanumeric" % name
    return None


def reserved(key):
    prefix = str(key).rpartition("/")[0]
    return any(prefix == p or prefix.endswith("." + p) for p in RESERVED_PREFIXES)


def metadata_findings(metadata):
    """Findings for ``metadata.labels`` and ``metadata.annotations`` of a Job."""
    found = []
    for field in ("labels", "annotations"):
        values = metadata.get(field) if isinstance(metadata, dict) else None
        if values is None:
            continue
        if not isinstance(values, dict):
            found.append(finding("job-label-invalid", "metadata.%s must be a mapping." % field,
                                 path="metadata.%s" % field, hint=HINT % field))  # fmt: skip
            continue
        for key, value in sorted(values.items(), key=lambda kv: str(kv[0])):
            path = "metadata.%s[%r]" % (field, str(key))
            problem = key_problem(key)
            if problem is None and field == "labels" and not (isinstance(value, str) and _VALUE.match(value)):
                problem = "the value %r must be at most 63 letters, digits, '-', '_' or '.'" % (value,)
            if problem is None and field == "annotations" and not isinstance(value, str):
                problem = "the value must be a string"
            if problem:
                found.append(finding("job-label-invalid", "Job %s key %r: %s." % (field[:-1], str(key), problem),
                                     path=path, hint=HINT % field))  # fmt: skip
            elif reserved(key):
                found.append(
                    finding(
                        "job-label-reserved",
                        "Job %s %r uses a prefix RLark or Kubernetes sets (%s)."
                        % (field[:-1], str(key), ", ".join(RESERVED_PREFIXES)),
                        path=path,
                        hint="Use your team's own prefix (for example team.example.com/%s)."
                        % str(key).rpartition("/")[2],
                    )
                )
    return found


def render_metadata(name, job):
    """Job metadata: the name plus the manifest's labels and annotations (as strings)."""
    metadata = {"name": name}
    for field in ("labels", "annotations"):
        values = (job or {}).get(field)
        if isinstance(values, dict) and values:
            metadata[field] = {str(k): str(v) for k, v in values.items()}
    return metadata
