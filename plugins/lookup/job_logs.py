# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark.ops.job_logs: the main-container logs of RLark Jobs, optionally waiting for signals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: job_logs
author: rlark.ops contributors (@rlark-ops)
short_description: Read (and wait for) the logs of an RLark Job's pods
version_added: 0.1.0
description:
  - Returns, for each Job name, the C(main) container logs of its pods from one of three sources,
    read on the controller (no module run).
  - C(files) reads C(<logs_dir>/<job>/<pod>.log) (the sandbox writes these; a log shipper can too)
    and keeps the whole history; C(kubeconfig) reads the pods (namespace C(rlark-system)) in the
    data-plane cluster each pod's Task runs in; C(gateway) calls RLark's C(/jobs/<job>/logs) endpoint,
    which only has the last 1000 lines of Running pods.
  - With O(wait_for) it polls until every regex is found in the head pod's log, any O(stop_on)
    regex is found, or O(wait_timeout) passes; the result says which.
extends_documentation_fragment:
  - rlark.ops.log_source.lookup
options:
  _terms:
    description: Job names.
    required: true
    type: list
    elements: str
  logs_dir:
    description: Directory holding C(<job>/<pod>.log) for O(source=files).
    type: str
    env:
      - name: RLARK_LOGS_DIR
  gateway_url:
    description: Base URL of the RLark gateway for O(source=gateway).
    type: str
    env:
      - name: RLARK_GATEWAY_URL
  kubeconfig:
    description:
      - Kubeconfig of the data-plane cluster for O(source=kubeconfig); with O(kubeconfigs), the one for clusters not
        listed there.
    type: str
    env:
      - name: RLARK_DATA_PLANE_KUBECONFIG
  kubeconfigs:
    description:
      - Data-plane cluster ID to kubeconfig path for O(source=kubeconfig) (the playbook variable
        C(rlark_data_plane_kubeconfigs)); each pod is read from the cluster its Task runs in (O(clusters)).
    type: dict
    default: {}
  clusters:
    description:
      - Pod or Task object name to the cluster ID it runs in (the P(rlark.ops.log_clusters#filter) filter of an
        M(rlark.ops.rlark_job_info) item).
    type: dict
    default: {}
  namespace:
    description: Namespace of the workloads in the data-plane cluster.
    type: str
    default: rlark-system
  head_task:
    description: Name of the head task template; the head pod is C(<job>-<head_task>-0).
    type: str
    required: true
  pods:
    description: Pod names to read for O(source=kubeconfig) (defaults to the head pod).
    type: list
    elements: str
    default: []
  wait_for:
    description: Regexes that must all appear in the head pod's log.
    type: list
    elements: str
    default: []
  stop_on:
    description: Regexes that end the wait at once (failure signals).
    type: list
    elements: str
    default: []
  current_container:
    description:
      - Judge O(wait_for) and O(stop_on) on the lines of the current head container only.
      - A C(files) log keeps the lines of every container that ran under the pod's name (a Job stopped and
        started again, a restarted pod); with this option the text before the last container start line
        (O(container_start)) is dropped from RV(_raw[].head_log) and RV(_raw[].logs).
    type: bool
    default: false
  container_start:
    description: Regex of the first line a new head container prints (multi-line mode).
    type: str
    default: '^(?:Ray runtime started\.|Starting Ray head node\b)'
  wait_timeout:
    description:
      - Seconds to wait for O(wait_for).
      - The older name C(timeout) is an alias.
    type: float
    default: 0
    aliases: [timeout]
  wait_sleep:
    description:
      - Seconds between two reads while waiting.
      - The older name C(interval) is an alias.
    type: float
    default: 1
    aliases: [interval]
"""

EXAMPLES = r"""
- name: Wait until the head says the run script started
  ansible.builtin.set_fact:
    logs: >-
      {{ lookup('rlark.ops.job_logs', 'demo', head_task='actor', logs_dir='/srv/logs',
                wait_for=['Executing run script'], stop_on=['Traceback'], wait_timeout=60) }}

- name: Fail when the run script never started or the log shows a failure
  ansible.builtin.assert:
    that:
      - not logs.timed_out
      - logs.stopped_on | length == 0
    fail_msg: "{{ logs.head_pod }}: {{ logs.head_log[-2000:] }}"

- name: The last 1000 lines of every Running pod of two Jobs from the RLark gateway
  ansible.builtin.debug:
    msg: "{{ item.job }}: {{ item.logs.keys() | list }}"
  loop: >-
    {{ query('rlark.ops.job_logs', 'ppo-demo', 'sac-demo', head_task='actor', source='gateway',
             gateway_url='http://rlark-gateway.example.com:8080') }}
"""

RETURN = r"""
_raw:
  description: One result per Job.
  type: list
  elements: dict
  contains:
    job:
      description: The Job name.
      type: str
    head_pod:
      description: The head pod's name.
      type: str
    logs:
      description: Pod name to log text.
      type: dict
    head_log:
      description: The head pod's log text.
      type: str
    timed_out:
      description: Whether O(wait_timeout) passed before every O(wait_for) regex was seen.
      type: bool
    stopped_on:
      description: The O(stop_on) regexes found.
      type: list
    waited_seconds:
      description: How long the lookup waited.
      type: float
"""


import re  # noqa: E402
import time  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import (  # noqa: E402
    LogSourceError,
    current_container,
    head_pod_name,
    read_logs,
    wait_for_logs,
)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        # Empty strings mean "not set" so that roles can pass their defaults through unchanged.
        opts = {k: self.get_option(k) or None for k in ("source", "logs_dir", "gateway_url", "kubeconfig", "namespace")}
        head_task = self.get_option("head_task")
        try:
            wait_for = [re.compile(p, re.MULTILINE) for p in self.get_option("wait_for")]
            stop_on = [re.compile(p, re.MULTILINE) for p in self.get_option("stop_on")]
        except re.error as exc:
            raise AnsibleLookupError("rlark.ops.job_logs: invalid regex: %s" % exc) from exc
        results = []
        for job in terms:
            head = head_pod_name(job, head_task)
            pods = self.get_option("pods") or [head]

            def read(job=job, pods=pods):
                logs = read_logs(
                    opts["source"],
                    job,
                    pod_names=pods,
                    logs_dir=opts["logs_dir"],
                    gateway_url=opts["gateway_url"],
                    kubeconfig=opts["kubeconfig"],
                    kubeconfigs=self.get_option("kubeconfigs"),
                    clusters=self.get_option("clusters"),
                    namespace=opts["namespace"],
                )
                if not self.get_option("current_container"):
                    return logs
                return {pod: current_container(text, self.get_option("container_start")) for pod, text in logs.items()}

            def done(text):
                return any(r.search(text) for r in stop_on) or all(r.search(text) for r in wait_for)

            started = time.monotonic()
            try:
                logs, timed_out = wait_for_logs(
                    read, head, done, self.get_option("wait_timeout"), self.get_option("wait_sleep")
                )
            except LogSourceError as exc:
                raise AnsibleLookupError("rlark.ops.job_logs: %s" % exc) from exc
            text = logs.get(head, "")
            results.append(
                {
                    "job": job,
                    "head_pod": head,
                    "logs": logs,
                    "head_log": text,
                    "timed_out": bool(wait_for) and timed_out,
                    "stopped_on": [r.pattern for r in stop_on if r.search(text)],
                    "waited_seconds": round(time.monotonic() - started, 2),
                }
            )
        return results
