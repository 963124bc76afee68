# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    # The auth options shared by every rlark.ops API module (kubernetes.core names and env vars).
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig content as a dictionary.
      - If not set, the value of the E(K8S_AUTH_KUBECONFIG) environment variable is used.
      - Without O(kubeconfig) and O(host), C(~/.kube/config) is read if it exists, else the in-cluster service account.
      - Exec and auth-provider plugins in a kubeconfig file are supported through the C(kubernetes) Python package.
    type: raw
    version_added: 0.1.0
  context:
    description:
      - The kubeconfig context to use instead of its C(current-context).
      - If not set, the value of the E(K8S_AUTH_CONTEXT) environment variable is used.
    type: str
    version_added: 0.1.0
  host:
    description:
      - URL of the API server, for example C(https://127.0.0.1:6443). Overrides the kubeconfig server.
      - If not set, the value of the E(K8S_AUTH_HOST) environment variable is used.
    type: str
    version_added: 0.1.0
  api_key:
    description:
      - Bearer token for the API server. Overrides the kubeconfig credentials.
      - If not set, the value of the E(K8S_AUTH_API_KEY) environment variable is used.
    type: str
    version_added: 0.1.0
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - If not set, the value of the E(K8S_AUTH_VERIFY_SSL) environment variable is used, else the kubeconfig's
        C(insecure-skip-tls-verify), else V(true).
    type: bool
    aliases: [verify_ssl]
    version_added: 0.1.0
  ca_cert:
    description:
      - Path to a CA certificate file that signs the API server's certificate.
      - If not set, the value of the E(K8S_AUTH_SSL_CA_CERT) environment variable is used.
    type: path
    aliases: [ssl_ca_cert]
    version_added: 0.1.0
  client_cert:
    description:
      - Path to a client certificate file for TLS client authentication.
      - If not set, the value of the E(K8S_AUTH_CERT_FILE) environment variable is used.
    type: path
    aliases: [cert_file]
    version_added: 0.1.0
  client_key:
    description:
      - Path to the key file of O(client_cert).
      - If not set, the value of the E(K8S_AUTH_KEY_FILE) environment variable is used.
    type: path
    aliases: [key_file]
    version_added: 0.1.0
  proxy:
    description:
      - URL of an HTTP proxy to tunnel API requests through (C(CONNECT)), for example C(http://proxy:3128).
      - If not set, the value of the E(K8S_AUTH_PROXY) environment variable is used, else the kubeconfig's C(proxy-url).
    type: str
    version_added: 0.1.0
  no_proxy:
    description:
      - Comma-separated host names or domain suffixes that bypass O(proxy); V(*) bypasses it for every host.
      - If not set, the value of the E(K8S_AUTH_NO_PROXY) environment variable is used.
    type: str
    version_added: 0.1.0
  connect_timeout:
    description:
      - Seconds to keep retrying an API server that has not answered yet (connection refused, unreachable),
        so a wrong address fails fast with the server's URL in the message.
      - Once the server has answered, dropped connections are retried within the task's whole time budget.
      - If not set, the value of the E(RLARK_CONNECT_TIMEOUT) environment variable is used, else V(10).
      - The playbooks pass the variable C(rlark_connect_timeout).
    type: float
    version_added: 0.1.0
notes:
  - The API client retries a 429 answer after its C(Retry-After) delay, and 5xx answers and dropped connections
    with jittered exponential backoff, all within the task's time budget.
  - Lists are read in pages (C(limit)/C(continue)); an expired continue token restarts the list.
requirements:
  - PyYAML (only to read a kubeconfig file)
"""

    # Notes of the modules that write (rlark.ops.auth.writes); the read-only ones do not carry them.
    WRITES = r"""
options: {}
notes:
  - Every write uses C(fieldValidation=Strict), so a misspelt or unknown field is an error instead of being pruned.
  - Check mode sends the writes as a server-side dry run (C(dryRun=All)).
  - A create is never resent blindly after a dropped connection; the object is read back first.
"""
