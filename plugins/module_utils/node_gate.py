# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint gate run where a hostPath checkpoint lives: on the Node's inventory host.

The rlark_jobs event source runs on the controller, where a Node's disk is not visible. With the
inventory the playbooks use (hosts with ``rlark_node_name``/``rlark_node_cluster``/``rlark_node_root``,
see placement.py), ``NodeGate.gate`` runs ``rlark.ops.rlark_ckpt_gate`` on that host as one ad-hoc
task (ansible-runner, which every Event-Driven Ansible install has) and returns the module's result,
which has the shape of ``checkpoint.gate.run_gate``'s. Blocking; the source calls it from a thread.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import DEFAULTS as GATE_DEFAULTS
from ansible_collections.rlark.ops.plugins.module_utils.placement import host_for_node

GATE_MODULE = "rlark.ops.rlark_ckpt_gate"


def _tool(name):
    """An Ansible CLI next to this Python (a venv) or on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return beside if os.access(beside, os.X_OK) else (shutil.which(name) or name)


class NodeGate:
    """``gate(node, host_path, options)``: the gate's verdict from the node's inventory host."""

    def __init__(self, inventory, refresh_seconds=300.0, timeout=120.0, log=None):
        self.inventory = os.path.abspath(os.path.expanduser(inventory))
        self.refresh_seconds = refresh_seconds
        self.timeout = timeout
        self.log = log or (lambda message: None)
        self._read_at = None
        self._hostvars, self._groups = {}, {}

    def _read_inventory(self):
        if self._read_at is not None and time.monotonic() - self._read_at < self.refresh_seconds:
            return
        proc = subprocess.run(
            [_tool("ansible-inventory"), "-i", self.inventory, "--list"],
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise GateError("ansible-inventory -i %s failed: %s" % (self.inventory, proc.stderr.strip()[-500:]))
        data = json.loads(proc.stdout)
        self._hostvars = (data.get("_meta") or {}).get("hostvars") or {}
        self._groups = {name: group.get("hosts") or [] for name, group in data.items() if isinstance(group, dict)}
        self._read_at = time.monotonic()

    def host_for(self, node):
        self._read_inventory()
        return host_for_node(node, self._hostvars, self._groups)

    def module_args(self, host_path, options):
        # The gate options (run_gate's) are the module's options of the same names.
        args = {k: options[k] for k in GATE_DEFAULTS if options.get(k) is not None}
        # rlark_node_root prefixes the path on hosts that keep a node's filesystem below a folder (the sandbox).
        args.update(
            path="{{ rlark_node_root | default('') }}%s" % host_path.rstrip("/"),
            step="latest",
            fail_when_incomplete=False,
        )
        return args

    def gate(self, node, host_path, options):
        host = self.host_for(node)
        if host is None:
            raise GateError(
                "node %s has no host in inventory %s (set rlark_node_name: %s on the host that holds its disk)"
                % (node, self.inventory, node)
            )
        try:
            import ansible_runner
        except ImportError as exc:
            raise GateError("gating hostPath checkpoints on the node needs the ansible-runner package") from exc
        data_dir = tempfile.mkdtemp(prefix="rlark-node-gate-")
        try:
            run = ansible_runner.run(
                private_data_dir=data_dir,
                inventory=self.inventory,
                host_pattern=host,
                module=GATE_MODULE,
                module_args=json.dumps(self.module_args(host_path, options)),
                # ansible-runner drops the module arguments when given `binary`: put the ansible CLI on PATH.
                envvars={"PATH": os.pathsep.join([os.path.dirname(_tool("ansible")), os.environ.get("PATH", "")])},
                quiet=True,
                timeout=int(self.timeout),
            )
            result = None
            for item in run.events:
                if item.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable"):
                    result = (item.get("event_data") or {}).get("res") or {}
            said = " ".join(run.stdout.read().split()[-60:]) if result is None else ""
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
        if not result or result.get("failed") or result.get("unreachable"):
            why = (result or {}).get("msg") or "ansible-runner status %s: %s" % (run.status, said)
            raise GateError("%s on host %s (node %s) failed: %s" % (GATE_MODULE, host, node, why))
        if "steps" not in result:  # nothing to judge yet (no checkpoints root or no step in it)
            problems = [f.get("message") for f in result.get("findings") or [] if isinstance(f, dict)]
            raise GateError("%s on host %s: %s" % (host_path, host, result.get("msg") or "; ".join(problems[:2])))
        self.log("gated %s on host %s: newest complete step %s" % (host_path, host, result.get("latest_complete_step")))
        return result
