# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options and glue shared by the rlark.ops API modules (the Ansible-facing side of ``kube.py``).

The auth options use kubernetes.core's names so existing ``module_defaults`` carry over, and each
one declares its ``K8S_AUTH_*`` environment fallback here, where ansible-doc's twin
(``doc_fragments/auth.py``) documents it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import env_fallback


def _env(name):
    return (env_fallback, [name])


AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="raw", fallback=_env("K8S_AUTH_KUBECONFIG")),
    context=dict(type="str", fallback=_env("K8S_AUTH_CONTEXT")),
    host=dict(type="str", fallback=_env("K8S_AUTH_HOST")),
    api_key=dict(type="str", no_log=True, fallback=_env("K8S_AUTH_API_KEY")),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=_env("K8S_AUTH_VERIFY_SSL")),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=_env("K8S_AUTH_SSL_CA_CERT")),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=_env("K8S_AUTH_CERT_FILE")),
    # A path to the key file, not the key itself.
    client_key=dict(type="path", aliases=["key_file"], no_log=False, fallback=_env("K8S_AUTH_KEY_FILE")),
    proxy=dict(type="str", fallback=_env("K8S_AUTH_PROXY")),
    no_proxy=dict(type="str", fallback=_env("K8S_AUTH_NO_PROXY")),
    connect_timeout=dict(type="float", fallback=_env("RLARK_CONNECT_TIMEOUT")),
)

AUTH_OPTION_NAMES = tuple(AUTH_ARG_SPEC)

# The object-storage target of the checkpoint modules (rlark_ckpt_gate, rlark_ckpt_tree).
S3_ARG_SPEC = dict(
    bucket=dict(type="str", required=True),
    prefix=dict(type="str", default=""),
    endpoint_url=dict(type="str", fallback=(env_fallback, ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"])),
    region=dict(type="str", fallback=(env_fallback, ["AWS_REGION", "AWS_DEFAULT_REGION"])),
    access_key=dict(type="str", no_log=False, fallback=_env("AWS_ACCESS_KEY_ID")),
    secret_key=dict(type="str", no_log=True, fallback=_env("AWS_SECRET_ACCESS_KEY")),
)

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
    own_job=dict(type="str"),
    fail_on_findings=dict(type="bool", default=True),
    timeout=dict(type="int", default=120),
)
NODE_MATCH_RULES = dict(mutually_exclusive=[("job", "selectors")], required_one_of=[("job", "selectors")])


def auth_params(params):
    return {name: params.get(name) for name in AUTH_OPTION_NAMES}


def argument_spec(**module_options):
    """The module's own options plus the shared auth options."""
    spec = dict(AUTH_ARG_SPEC)
    spec.update(module_options)
    return spec


def fail_kube(module, exc, **result):
    """``fail_json`` for a client error: one sentence in ``msg`` plus the parsed API Status."""
    module.fail_json(msg=str(exc), status=exc.to_dict(), **result)


def fail_refused(module, exc, **result):
    """``fail_json`` for a refusal: the rendered findings in ``msg`` and the list in ``findings``."""
    from ansible_collections.rlark.ops.plugins.module_utils.findings import render

    module.fail_json(msg="%s %s" % (exc, render(exc.findings)), findings=exc.findings, **result)


def call_counts(client):
    """``api_calls`` and ``api_retries`` for a module result (zeros before a client exists)."""
    if client is None:
        return {"api_calls": 0, "api_retries": 0}
    return {"api_calls": client.api_calls, "api_retries": client.retries}
