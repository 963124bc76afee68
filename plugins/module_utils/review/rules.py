# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The review's rule registry: each finding id it can emit, with its severity and the check that emits it.

``RULES`` rows are ``(id, severity, check)``; an id whose severity depends on the input (an
acknowledged mount, for example) has a row per severity. docs/findings.md documents every id with
that severity (tests/unit/plugins/module_utils/test_findings_catalogue.py reads this table), and
test_review_rules.py keeps the table equal to what the checks' sources emit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import naming, review, selectors
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, WARNING
from ansible_collections.rlark.ops.plugins.module_utils.review import (
    consistency,
    job_rules,
    legacy,
    mount_rules,
    pod_rules,
    record_rules,
    secret_rules,
)

RULES = (
    ("manifest-invalid", ERROR, review.input_findings),
    ("profile-invalid", ERROR, review.input_findings),
    ("manifest-missing", ERROR, review.input_findings),
    ("profile-missing", ERROR, review.input_findings),
    ("review-internal-error", ERROR, review.internal_error),
    ("domain-unapproved", ERROR, consistency.consistency_findings),
    ("ssh-key-unapproved", ERROR, consistency.consistency_findings),
    ("role-template-missing", ERROR, consistency.consistency_findings),
    ("role-template-unexpected", ERROR, consistency.consistency_findings),
    ("role-mismatch", ERROR, consistency._compare_task),
    ("head-mismatch", ERROR, consistency._compare_task),
    ("selector-mismatch", ERROR, consistency._compare_task),
    ("replicas-mismatch", ERROR, consistency._compare_task),
    ("image-mismatch", ERROR, consistency._compare_task),
    ("job-differs-from-records", ERROR, consistency._compare_task),
    ("cpu-memory-unapproved", ERROR, consistency._job_resource_findings),
    ("resources-not-approved", ERROR, consistency._job_resource_findings),
    ("job-unknown-field", ERROR, job_rules.check_keys),
    ("job-invalid", ERROR, job_rules.job_findings),
    ("job-api-invalid", ERROR, job_rules.job_findings),
    ("job-no-tasks", ERROR, job_rules.job_findings),
    ("head-count", ERROR, job_rules.job_findings),
    ("head-not-first", ERROR, job_rules.job_findings),
    ("agent-type-unsupported", ERROR, job_rules._task_findings),
    ("role-invalid", ERROR, job_rules._task_findings),
    ("tensorboard-outside-head", WARNING, job_rules._task_findings),
    ("prepare-installs", WARNING, job_rules._task_findings),
    ("runscript-missing", ERROR, job_rules._task_findings),
    ("runscript-outside-head", ERROR, job_rules._task_findings),
    ("runscript-no-workdir", ERROR, job_rules._task_findings),
    ("workload-missing", ERROR, job_rules._workload_findings),
    ("workload-kind-unsupported", ERROR, job_rules._workload_findings),
    ("replicas-zero", ERROR, job_rules._workload_findings),
    ("template-metadata-pruned", ERROR, job_rules._workload_findings),
    ("head-replicas", ERROR, job_rules._workload_findings),
    ("container-not-main", ERROR, job_rules._container_findings),
    ("container-extra", WARNING, job_rules._container_findings),
    ("image-not-pinned", ERROR, job_rules._container_findings),
    ("legacy-field", ERROR, legacy.legacy_findings),
    ("mount-unclear", ERROR, mount_rules.mount_findings),
    ("storage-class-unapproved", ERROR, mount_rules.mount_findings),
    ("mount-shadows-image", ERROR, mount_rules._shadow_findings),
    ("mount-shadows-image", WARNING, mount_rules._shadow_findings),
    ("mount-inside-image-path", WARNING, mount_rules._shadow_findings),
    ("hostpath-unapproved", ERROR, mount_rules._host_path_findings),
    ("device-request-limit-mismatch", ERROR, pod_rules.device_findings),
    ("volume-type-unsupported", ERROR, pod_rules.volume_findings),
    ("storage-map-orphan", WARNING, pod_rules.volume_findings),
    ("mount-volume-missing", ERROR, pod_rules.volume_findings),
    ("mount-unclear", ERROR, pod_rules.reserved_path_findings),
    ("mount-reserved-path", ERROR, pod_rules.reserved_path_findings),
    ("domain-unapproved", ERROR, record_rules.records_findings),
    ("profile-role-missing", ERROR, record_rules.records_findings),
    ("profile-role-unknown", WARNING, record_rules.records_findings),
    ("records-not-linked", ERROR, record_rules._link_and_signal_findings),
    ("signals-failure-missing", WARNING, record_rules._link_and_signal_findings),
    ("signals-missing", ERROR, record_rules._link_and_signal_findings),
    ("runscript-missing", ERROR, record_rules._head_record_findings),
    ("runscript-outside-head", ERROR, record_rules._head_record_findings),
    ("image-digest-conflict", ERROR, record_rules._image_findings),
    ("image-not-pinned", ERROR, record_rules._image_findings),
    ("image-unverified", ERROR, record_rules._image_findings),
    ("image-provenance-missing", ERROR, record_rules._image_findings),
    ("image-compat-missing", ERROR, record_rules._compat_findings),
    ("cpu-memory-unapproved", ERROR, record_rules._resource_record_findings),
    ("resources-not-approved", ERROR, record_rules._resource_record_findings),
    ("robot-safety-missing", ERROR, record_rules._robot_findings),
    ("selector-unproven", ERROR, record_rules._selector_record_findings),
    ("selector-other-cluster", ERROR, record_rules._selector_record_findings),
    ("head-match-count", ERROR, record_rules._selector_record_findings),
    ("replicas-match-mismatch", ERROR, record_rules._selector_record_findings),
    ("location-not-persistent", ERROR, record_rules._location_findings),
    ("env-secret", ERROR, secret_rules.env_secret_findings),
    ("inline-secret", ERROR, secret_rules.inline_secret_findings),
    ("job-name-missing", ERROR, naming.name_findings),
    ("job-name-invalid", ERROR, naming.name_findings),
    ("task-name-missing", ERROR, naming.name_findings),
    ("task-name-duplicate", ERROR, naming.name_findings),
    ("task-name-invalid", ERROR, naming.name_findings),
    ("task-name-too-long", ERROR, naming.name_findings),
    ("selector-empty", ERROR, selectors.static_selector_findings),
    ("selector-multivalue", ERROR, selectors.static_selector_findings),
    ("selector-empty-value", ERROR, selectors.static_selector_findings),
    ("selector-cr-only-key", ERROR, selectors.static_selector_findings),
    ("selector-annotation-key", ERROR, selectors.static_selector_findings),
)


def rule_ids():
    """Every id the review can emit."""
    return {rule[0] for rule in RULES}


def severities():
    """``{id: {severity, ...}}``."""
    out = {}
    for rule_id, severity, _check in RULES:
        out.setdefault(rule_id, set()).add(severity)
    return out


__all__ = ["RULES", "rule_ids", "severities"]
