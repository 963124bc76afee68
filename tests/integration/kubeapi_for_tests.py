"""Raw REST access to the sandbox API server for infra tests (status codes matter, so no client library).

It reuses the sandbox's own stdlib client, which is independent of the collection's kube.py.
"""

import os
import sys

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "sandbox"))
from sandboxlib.kubeapi import KubeApi


class Api(KubeApi):
    def request(self, method, path, body=None, content_type=None):
        if content_type is None:
            content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        return super().request(method, path, body, content_type=content_type)
