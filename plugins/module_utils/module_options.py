# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument specs shared by the rlark.ops modules and action plugins (their Ansible-facing side).

The auth options come from the one list in ``kube_auth.AUTH_OPTION_SPECS`` (kubernetes.core's names,
so existing ``module_defaults`` carry over), each with its declared environment fallback.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import env_fallback
from ansible_collections.rlark.ops.plugins.module_utils.kube_auth import AUTH_OPTION_SPECS


def _env(*names):
    return (env_fallback, list(names))


def _auth_option(spec):
    option = {key: value for key, value in spec.items() if key != "env"}
    option["fallback"] = _env(*spec["env"])
    return option


AUTH_ARG_SPEC = {name: _auth_option(spec) for name, spec in AUTH_OPTION_SPECS.items()}

NODE_MATCH_SPEC = dict(
    job=dict(type="dict"),
    selectors=dict(
        type="list",
        elements="dict",
        options=dict(
            name=dict(type="str", required=True),
            selector=dict(type="dict", default={}),
            replicas=dict(type="int", default=1),
            head=dict(type="bool", default=False),
            requests=dict(type="dict", default={}),
        ),
    ),
    cluster_id=dict(type="str"),
    expected_nodes=dict(type="dict"),
    profile=dict(type="dict"),
    own_job=dict(type="str"),
    fail_on_findings=dict(type="bool", default=True),
    timeout=dict(type="int", default=120),
)
NODE_MATCH_RULES = dict(mutually_exclusive=[("job", "selectors")], required_one_of=[("job", "selectors")])


def argument_spec(**module_options):
    """The module's own options plus the shared auth options."""
    spec = dict(AUTH_ARG_SPEC)
    spec.update(module_options)
    return spec
