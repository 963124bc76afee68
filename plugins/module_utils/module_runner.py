# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How every API module and action plugin runs: one client per task, one mapping of failures.

The kubernetes.core ``run_module`` pattern in small: ``with api_client(module, timeout) as client``
builds the client from the module's auth options, closes it, and turns a refusal (``findings.Refused``)
or a client error (``kube.KubeError``) into ``fail_json`` with the API call counts. Action plugins,
which return their result instead of exiting, use :func:`run_core` (or :func:`failure_result`) for the
same mapping. Core modules take a client and never import this runner.
Plain Python: ``module`` is anything with ``params``, ``log`` and ``fail_json``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib

from ansible_collections.rlark.ops.plugins.module_utils.findings import Refused, render
from ansible_collections.rlark.ops.plugins.module_utils.kube import KubeError, client_from_params

FAILURES = (Refused, KubeError)


def call_counts(client):
    """``api_calls`` and ``api_retries`` for a task result (zeros before a client exists)."""
    if client is None:
        return {"api_calls": 0, "api_retries": 0}
    return {"api_calls": client.api_calls, "api_retries": client.retries}


def failure_result(exc, client=None):
    """The failed task result for a refusal or a client error.

    A refusal puts its rendered findings in ``msg`` and the list in ``findings``; a client error
    says one sentence in ``msg`` and gives the parsed API Status in ``status``. ``changed`` is what
    the failing call says it already did; the counts come from ``client``, else from ``exc.counts``
    (set by helpers that own their client).
    """
    out = {"failed": True, "changed": bool(getattr(exc, "changed", False))}
    if isinstance(exc, Refused):
        out.update(msg="%s %s" % (exc, render(exc.findings)), findings=exc.findings)
    else:
        out.update(msg=str(exc), status=exc.to_dict())
    counts = getattr(exc, "counts", None) if client is None else None
    out.update(counts or call_counts(client))
    return out


@contextlib.contextmanager
def reported_failures(module, client=None):
    """Run the block; a refusal or client error ends the module with ``fail_json``."""
    try:
        yield
    except FAILURES as exc:
        result = failure_result(exc, client)
        result.pop("failed")
        module.fail_json(**result)


@contextlib.contextmanager
def api_client(module, timeout, log=None):
    """A client for ``module.params`` that lives for the block; failures end the module (see above)."""
    with reported_failures(module):
        client = client_from_params(module.params, timeout=timeout, log=log or module.log)
    try:
        with reported_failures(module, client):
            yield client
    finally:
        client.close()


def run_core(params, core, timeout, log=None):
    """``core(client, params)``'s result, with a client for ``params`` that lives for the call.

    The action-plugin twin of :func:`api_client`: a refusal or client error becomes the failed result
    :func:`failure_result` builds, and the API call counts join every result.
    """
    client = None
    try:
        client = client_from_params(params, timeout=timeout, log=log)
        result = core(client, params)
    except FAILURES as exc:
        return failure_result(exc, client)
    finally:
        if client is not None:
            client.close()
    return dict(result, **call_counts(client))


def run_module_core(module, core, timeout):
    """:func:`run_core` for a module: exits with its result (``fail_json`` when it says ``failed``)."""
    result = run_core(module.params, core, timeout, log=module.log)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


__all__ = [
    "FAILURES",
    "api_client",
    "call_counts",
    "failure_result",
    "reported_failures",
    "run_core",
    "run_module_core",
]
