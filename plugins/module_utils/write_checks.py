# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``rlark_job`` checks around a create or update that RLark's controller would turn into a silent mess.

- Before: every template's nodeSelector must resolve the way RLark resolves it, to one cluster. RLark
  takes the first comma value of each key untrimmed and the namespace of whichever matching Node its
  unordered cache lists first, so a selector matching Nodes in two clusters can create a Task in each.
- After an update that changes replicas: RLark compares Task specs only, so the ray annotations of the
  Tasks whose spec did not change (total nodes, rank starts) stay stale.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import Refused, finding, has_errors
from ansible_collections.rlark.ops.plugins.module_utils.jobs import job_name
from ansible_collections.rlark.ops.plugins.module_utils.nodes import fetch_node_matches
from ansible_collections.rlark.ops.plugins.module_utils.selectors import resolution_selector, whitespace_findings


def _label_selector(selector):
    return ",".join("%s=%s" % (k, v) for k, v in sorted(selector.items()))


def selector_findings(client, job):
    """``selector-whitespace`` and ``selector-multi-cluster`` (errors) for every template of ``job``."""
    found, wanted = [], {}
    for index, tmpl in enumerate(jobspec.tasks(job)):
        node_selector = tmpl.get("nodeSelector") or {}
        path = "spec.tasks[%d].nodeSelector" % index
        spaced = whitespace_findings(node_selector, path)
        found.extend(spaced)
        if node_selector and not spaced:
            wanted[index] = _label_selector(resolution_selector(node_selector))
    if not wanted:
        return found
    matches = fetch_node_matches(client, list(wanted.values()))[0]
    for index, label_selector in sorted(wanted.items()):
        clusters = sorted({(n.get("metadata") or {}).get("namespace") for n in matches.get(label_selector) or []})
        if len(clusters) > 1:
            found.append(
                finding(
                    "selector-multi-cluster",
                    "Task %r: selector %s matches Nodes in %d clusters (%s); RLark picks whichever its cache "
                    "lists first on every reconcile, so it can create a Task in each of them."
                    % (jobspec.tasks(job)[index].get("name"), label_selector, len(clusters), ", ".join(clusters)),
                    path="spec.tasks[%d].nodeSelector" % index,
                    hint="Make the first value of each key identify exactly one cluster (e.g. a unique hostname).",
                )
            )
    return found


def check_before_write(client, desired):
    """``ensure_present``'s ``before_write``: ``selector_findings``, raising ``Refused`` on errors."""

    def check():
        found = selector_findings(client, desired)
        if has_errors(found):
            raise Refused("Refusing to write Job %r." % job_name(desired), found)
        return found

    return check


def replica_change_findings(before, after):
    """``job-update-stale-annotations`` (warning) when an update changed any template's replicas."""
    old = {t.get("name"): jobspec.replicas(t) for t in jobspec.tasks(before or {})}
    changed = [
        "%s %s->%s" % (t.get("name"), old[t.get("name")], jobspec.replicas(t))
        for t in jobspec.tasks(after or {})
        if t.get("name") in old and old[t.get("name")] != jobspec.replicas(t)
    ]
    if not changed:
        return []
    return [
        finding(
            "job-update-stale-annotations",
            "The update changed replicas (%s). RLark rewrites a Task's ray annotations only when its own spec "
            "changes, so the other Tasks keep the old total node count and rank starts and Ray may wait for "
            "the wrong number of nodes." % ", ".join(changed),
            severity="warning",
            path="spec.tasks",
            hint="Stop and start the Job (state=stopped, then state=started) to rewrite every Task, or create "
            "a new Job (copy_from).",
        )
    ]
