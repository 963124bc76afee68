# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the API client connects and how it authenticates: kubernetes.core-style options, kubeconfig.

Precedence: explicit options override the kubeconfig; without ``host`` or ``kubeconfig``,
``~/.kube/config`` is used if present, else the in-cluster service account.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import contextlib
import os
import tempfile

from ansible_collections.rlark.ops.plugins.module_utils.kube_errors import ConfigError

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# The one list of auth options: kubernetes.core's names (so module_defaults carry over), each with
# its environment fallbacks. ``module_options.AUTH_ARG_SPEC`` turns it into the modules' argspec and
# ``doc_fragments/auth.py`` documents it (test_module_options.py keeps the two in step).
AUTH_OPTION_SPECS = {
    "kubeconfig": {"type": "raw", "env": ["K8S_AUTH_KUBECONFIG"]},
    "context": {"type": "str", "env": ["K8S_AUTH_CONTEXT"]},
    "host": {"type": "str", "env": ["K8S_AUTH_HOST"]},
    "api_key": {"type": "str", "no_log": True, "env": ["K8S_AUTH_API_KEY"]},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"], "env": ["K8S_AUTH_VERIFY_SSL"]},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"], "env": ["K8S_AUTH_SSL_CA_CERT"]},
    "client_cert": {"type": "path", "aliases": ["cert_file"], "env": ["K8S_AUTH_CERT_FILE"]},
    # A path to the key file, not the key itself.
    "client_key": {"type": "path", "aliases": ["key_file"], "no_log": False, "env": ["K8S_AUTH_KEY_FILE"]},
    "proxy": {"type": "str", "env": ["K8S_AUTH_PROXY"]},
    "no_proxy": {"type": "str", "env": ["K8S_AUTH_NO_PROXY"]},
    "connect_timeout": {"type": "float", "env": ["RLARK_CONNECT_TIMEOUT"]},
}
AUTH_OPTIONS = tuple(AUTH_OPTION_SPECS)


def auth_params(params):
    """The auth options out of a module's (or a plugin's) parameters."""
    return {name: (params or {}).get(name) for name in AUTH_OPTIONS}


def _b64file(data, suffix, tempfiles):
    handle, name = tempfile.mkstemp(prefix="rlark-", suffix=suffix)
    with os.fdopen(handle, "wb") as out:
        out.write(base64.b64decode(data))
    tempfiles.append(name)
    return name


def _load_yaml(path):
    try:
        import yaml
    except ImportError:
        raise ConfigError("Reading a kubeconfig file needs the PyYAML Python package.") from None
    try:
        with open(path) as handle:
            # libyaml's loader when present: a kubeconfig with embedded certificates parses ~10x faster.
            return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    except OSError as exc:
        raise ConfigError("Cannot read kubeconfig %s: %s." % (path, exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError("Kubeconfig %s is not valid YAML: %s." % (path, str(exc).splitlines()[0])) from None


def _named(entries, name, what):
    for entry in entries or []:
        if entry.get("name") == name:
            return entry.get(what) or {}
    raise ConfigError("The kubeconfig has no %s named %r." % (what, name))


def _exec_token(kubeconfig_path, context):
    """Token from an exec/auth-provider plugin, via the kubernetes package (imported only here)."""
    try:
        from kubernetes import client as k8s_client
        from kubernetes import config as k8s_config
    except ImportError:
        raise ConfigError(
            "The kubeconfig uses an exec or auth-provider plugin; that needs the kubernetes package."
        ) from None
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=kubeconfig_path, context=context, client_configuration=configuration)
    return (configuration.api_key or {}).get("authorization", "").replace("Bearer ", "") or None


class Settings:
    """Everything needed to open a connection; built by ``resolve_auth``."""

    def __init__(self):
        self.server = None
        self.token = None
        self.username = None
        self.password = None
        self.ca_file = None
        self.ca_data = None
        self.client_cert = None
        self.client_key = None
        self.verify = True
        self.tls_server_name = None
        self.proxy = None
        self.no_proxy = None
        self.tempfiles = []

    def cleanup(self):
        for name in self.tempfiles:
            with contextlib.suppress(OSError):
                os.unlink(name)
        self.tempfiles = []


def _from_kubeconfig(settings, kubeconfig, context):
    base_dir = os.getcwd()
    path = None
    if isinstance(kubeconfig, dict):
        data = kubeconfig
    else:
        path = os.path.expanduser(str(kubeconfig).split(os.pathsep, 1)[0])
        base_dir = os.path.dirname(os.path.abspath(path))
        data = _load_yaml(path)
    context = context or data.get("current-context")
    if not context:
        raise ConfigError("The kubeconfig has no current-context; set the context option.")
    ctx = _named(data.get("contexts"), context, "context")
    cluster = _named(data.get("clusters"), ctx.get("cluster"), "cluster")
    user = _named(data.get("users"), ctx.get("user"), "user") if ctx.get("user") else {}

    def rel(p):
        return p if os.path.isabs(p) else os.path.join(base_dir, p)

    settings.server = cluster.get("server")
    if cluster.get("certificate-authority-data"):
        settings.ca_data = base64.b64decode(cluster["certificate-authority-data"]).decode("ascii")
    elif cluster.get("certificate-authority"):
        settings.ca_file = rel(cluster["certificate-authority"])
    if cluster.get("insecure-skip-tls-verify"):
        settings.verify = False
    settings.tls_server_name = cluster.get("tls-server-name")
    settings.proxy = cluster.get("proxy-url")
    if user.get("token"):
        settings.token = user["token"]
    elif user.get("tokenFile"):
        with open(rel(user["tokenFile"])) as handle:
            settings.token = handle.read().strip()
    if user.get("client-certificate-data"):
        settings.client_cert = _b64file(user["client-certificate-data"], ".crt", settings.tempfiles)
    elif user.get("client-certificate"):
        settings.client_cert = rel(user["client-certificate"])
    if user.get("client-key-data"):
        settings.client_key = _b64file(user["client-key-data"], ".key", settings.tempfiles)
    elif user.get("client-key"):
        settings.client_key = rel(user["client-key"])
    settings.username = user.get("username")
    settings.password = user.get("password")
    if (user.get("exec") or user.get("auth-provider")) and not settings.token:
        if path is None:
            raise ConfigError("Exec and auth-provider plugins need the kubeconfig as a file path, not a dict.")
        settings.token = _exec_token(path, context)


def resolve_auth(params):
    """Connection settings from kubernetes.core-style options (env fallbacks already applied)."""
    params = params or {}
    settings = Settings()
    kubeconfig = params.get("kubeconfig")
    if not kubeconfig and not params.get("host"):
        default = os.path.expanduser("~/.kube/config")
        if os.path.exists(default):
            kubeconfig = default
        elif os.path.exists(os.path.join(SERVICE_ACCOUNT_DIR, "token")):
            host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
            if host and port:
                settings.server = "https://%s:%s" % (host if ":" not in host else "[%s]" % host, port)
                with open(os.path.join(SERVICE_ACCOUNT_DIR, "token")) as handle:
                    settings.token = handle.read().strip()
                settings.ca_file = os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt")
    if kubeconfig:
        _from_kubeconfig(settings, kubeconfig, params.get("context"))
    if params.get("host"):
        settings.server = params["host"]
    if params.get("api_key"):
        settings.token = params["api_key"]
    if params.get("ca_cert"):
        settings.ca_file, settings.ca_data = params["ca_cert"], None
    if params.get("client_cert"):
        settings.client_cert = params["client_cert"]
    if params.get("client_key"):
        settings.client_key = params["client_key"]
    if params.get("validate_certs") is not None:
        settings.verify = bool(params["validate_certs"])
    if params.get("proxy"):
        settings.proxy = params["proxy"]
    if params.get("no_proxy"):
        settings.no_proxy = params["no_proxy"]
    if not settings.server:
        settings.cleanup()
        raise ConfigError(
            "No API server to talk to: pass -e rlark_kubeconfig=PATH (module option kubeconfig, or "
            "K8S_AUTH_KUBECONFIG), or set the module option host (or K8S_AUTH_HOST)."
        )
    return settings
