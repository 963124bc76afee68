# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugin shape of a runbook's decisions (rlark_resume_decision, rlark_verify_decision).

On the controller, no connection: validate ``SPEC``, call ``decide(options, check_mode)`` (a function over the
plain-Python owner), and return ``decision`` with its ``refusal`` ('' when none). A decision is never a change;
the role fails with ``refusal`` where the runbook says so. ``ERRORS`` raised by ``decide`` fail the task with
``describe(options, exc)``. ``self.task_vars`` are the task's variables (for a decision over the inventory). In
``FAILING_PHASES`` a refusal fails the task itself, its ``msg`` the refusal (said once).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


class DecisionAction(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    SPEC = {}
    ERRORS = (TypeError, ValueError)
    FAILING_PHASES = ()

    def decide(self, options, check_mode):
        raise NotImplementedError

    def describe(self, options, exc):
        return "%s (%s): %s" % (self._task.action, options.get("phase"), exc)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        options = plain(self.validate_argument_spec(argument_spec=self.SPEC)[1])
        self.task_vars = task_vars or {}
        try:
            decision = self.decide(options, bool(self._task.check_mode))
        except self.ERRORS as exc:
            result.update(failed=True, msg=self.describe(options, exc))
            return result
        if decision.get("refusal") and options.get("phase") in self.FAILING_PHASES:
            result.update(changed=False, failed=True, msg=decision["refusal"])
            return result
        result.update(changed=False, decision=decision, refusal=decision.get("refusal") or "")
        return result
