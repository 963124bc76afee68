#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_stop_with_logs
short_description: Stop an RLark Job and keep its logs complete up to the removal of its pods
version_added: 0.1.0
description:
  - Reads the C(main) container logs of the Job's pods, immediately sends the guarded stop (a JSON merge patch of
    C(spec.stopped) alone with a resourceVersion precondition, as M(rlark.ops.rlark_job) does for
    O(rlark.ops.rlark_job#module:state=stopped)), then keeps reading the logs until every Task has replicas 0 and
    no Pod CR of the Job remains.
  - After the patch, with O(log_source=kubeconfig), each pod's log is followed (C(follow=true), from the second of
    its last line read) until the kubelet ends the stream when the container ends, so the lines the trainer writes
    just before its pod goes are kept; a stream still open when the wait ends is cut, and its export says
    C(followed=cut off). The C(files) and C(gateway) sources are read again on every poll.
  - Every pod's log is streamed into an export file line by line (bounded memory for a log of any size); a later
    read that returns the whole log replaces the file, a read of a window of recent lines (RLark's gateway keeps
    1000 lines, and nothing once the pod is gone) is merged onto it, so nothing that was read once is lost.
  - An export from the gateway that reached its 1000-line limit is TRUNCATED; such an export refuses the stop
    before the patch (finding C(log-export-truncated)) unless O(accept_truncated_logs=true).
  - Logs that cannot be read before the stop refuse it (nothing is patched); a failed read while the pods go is
    reported in RV(log_errors).
  - The wait prints one progress line per change of what it observes.
  - Runs entirely in an action plugin on the controller, where the log sources are read. The guarded stop (gate,
    verdict, write-ahead stop record, recovery) is M(rlark.ops.rlark_guarded_stop).
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.auth
  - rlark.ops.log_source
attributes:
  check_mode:
    description: The stop is sent as a server-side dry run (C(dryRun=All)); no log is read and nothing is awaited.
options:
  name:
    description: Name of the Job.
    type: str
    required: true
  head_task:
    description: Name of the head task template; the head pod is C(<name>-<head_task>-0).
    type: str
    required: true
  pods:
    description: Data-plane pod names to read with O(log_source=kubeconfig) (defaults to the head pod).
    type: list
    elements: str
    default: []
  clusters:
    description:
      - Pod or Task object name to the data-plane cluster ID it runs in (the P(rlark.ops.log_clusters#filter) filter
        of the Job's Tasks and Pod CRs); a pod not listed is looked up by its Task's name (the pod name without its
        ordinal).
    type: dict
    default: {}
  accept_truncated_logs:
    description:
      - Stop even when an export is truncated (the gateway's 1000-line limit); RV(log_exports) then says
        C(truncation_accepted).
    type: bool
    default: false
  export_dir:
    description:
      - Directory for the export files (a new hidden directory is made in it); the system temporary directory when
        not set. M(rlark.ops.rlark_record) O(rlark.ops.rlark_record#module:log_exports) moves them into the record.
    type: path
  namespace:
    description: Namespace of the workloads in the data-plane cluster (default C(rlark-system)).
    type: str
  wait:
    description: Wait until no Pod CR remains, reading the logs on every poll.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the pods to go.
    type: int
    default: 600
  wait_sleep:
    description: Seconds between two polls.
    type: float
    default: 1.0
seealso:
  - module: rlark.ops.rlark_job
  - plugin: rlark.ops.job_logs
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Stop the Job with its logs read up to the removal of its pods
  rlark.ops.rlark_stop_with_logs:
    name: ppo-demo
    head_task: actor
    log_source: files
    logs_dir: /srv/rlark-logs
  register: stopped
"""

RETURN = r"""
action:
  description: C(stopped), or C(unchanged) when the Job was already stopped.
  returned: success
  type: str
patched_at:
  description: UTC time (ISO 8601) right after the stop patch was answered.
  returned: success
  type: str
pods_gone_at:
  description: UTC time when no Pod CR of the Job remained.
  returned: when the wait ended in time
  type: str
log_exports:
  description:
    - One entry per pod whose log was read; the file at C(path) holds the whole exported log (redacted lines).
    - C(source), C(cluster) (kubeconfig source), C(lines), C(bytes), C(first_timestamp) and C(last_timestamp) (from
      the kubelet with the kubeconfig source, else from a time at the start of the log lines, else null;
      C(timestamps_from) says which), C(truncated), C(truncation_accepted) (when truncated), C(followed) (with
      the kubeconfig source C(to the container's end) or C(cut off), see the description; null otherwise).
  returned: always
  type: list
  elements: dict
logs_complete:
  description: Every export was read and none is truncated, unavailable or cut off.
  returned: always
  type: bool
export_dir:
  description: The directory of the export files (removed when no stop was sent).
  returned: when the stop was sent
  type: str
findings:
  description: The finding that refused the stop (C(log-export-truncated)).
  returned: when a truncated export refused the stop
  type: list
  elements: dict
head_pod:
  description: The head pod's name.
  returned: always
  type: str
head_log:
  description: The last 256 KiB of the head pod's exported log (the whole log is in its export file).
  returned: success
  type: str
last_line_seen_at:
  description: Pod name to the UTC time its last exported line was first read (logs carry no timestamps).
  returned: success
  type: dict
head_last_line_seen_at:
  description: The same for the head pod.
  returned: success
  type: str
log_errors:
  description: Log reads that failed while the pods were going away.
  returned: success
  type: list
  elements: str
wait_log:
  description: Progress lines of the wait.
  returned: always
  type: list
  elements: str
"""
