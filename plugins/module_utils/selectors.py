# Copyright: rlark.ops contributors
# Apache License 2.0 (see LICENSE)
"""Node selector rules and RLark's namespace resolution.

RLark resolves a Task's cluster namespace from an equality selector built from only the **first**
element of each comma-separated value, matched against Nodes in **all** namespaces; the namespace of
the first match wins, and ``default`` is used when the selector is empty or nothing matches.
The agent then turns single values into a pod ``nodeSelector`` and comma values into ORed
``nodeAffinity`` terms. Keys that exist only on the Node CR never reach the data-plane node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.findings import finding

# Labels RLark puts only on the Node custom resource, never on the data-plane node.
CR_ONLY_LABEL_KEYS = ("rlark.io/cluster-id", "rlark.io/agent-type")
# Keys RLark keeps as annotations, so a selector on them matches nothing.
ANNOTATION_ONLY_KEYS = ("rlark.io/city", "rlark.io/gpu-model", "rlark.io/device-model", "rlark.io/model")
DEFAULT_NAMESPACE = "default"


def resolution_selector(node_selector):
    """The equality selector RLark's controller resolves the namespace with (first comma value)."""
    return {k: str(v).split(",", 1)[0] for k, v in (node_selector or {}).items()}


def static_selector_findings(node_selector, path):
    """Findings that need no Node inventory: empty, comma multi-value, CR-only or annotation keys."""
    found = []
    if not node_selector:
        return [
            finding(
                "selector-empty",
                "The nodeSelector is empty: RLark puts the Task in namespace 'default', where no agent runs it.",
                path=path,
                hint="Use the admin-verified single-value selector from the deployment profile.",
            )
        ]
    for key, value in sorted(node_selector.items()):
        kpath = "%s[%s]" % (path, key)
        text = "" if value is None else str(value)
        if "," in text:
            found.append(
                finding(
                    "selector-multivalue",
                    "Selector %s=%s has comma-separated values: RLark resolves the cluster from %r only, "
                    "while pods may land on any listed value." % (key, text, text.split(",", 1)[0]),
                    path=kpath,
                    hint="Use one value per key, proven to match exactly the intended nodes.",
                )
            )
        if not text.strip():
            found.append(finding("selector-empty-value", "Selector key %s has an empty value." % key, path=kpath))
        if key in CR_ONLY_LABEL_KEYS:
            found.append(
                finding(
                    "selector-cr-only-key",
                    "Selector key %s exists only on RLark's Node CR, not on the data-plane node: "
                    "the pod would stay unschedulable." % key,
                    path=kpath,
                    hint="Select on a real node label such as kubernetes.io/hostname.",
                )
            )
        if key in ANNOTATION_ONLY_KEYS:
            found.append(
                finding(
                    "selector-annotation-key",
                    "Selector key %s is an annotation on RLark Nodes, not a label: it matches nothing." % key,
                    path=kpath,
                    hint="Select on a real node label.",
                )
            )
    return found


def matches(labels, selector):
    """Equality match of a label dict against a selector dict."""
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


def resolve_namespace(node_selector, nodes):
    """Namespace RLark's controller would pick for a Task, given Node CRs in list order."""
    if not node_selector:
        return DEFAULT_NAMESPACE
    wanted = resolution_selector(node_selector)
    for node in nodes:
        meta = node.get("metadata", {})
        if matches(meta.get("labels"), wanted):
            return meta.get("namespace") or DEFAULT_NAMESPACE
    return DEFAULT_NAMESPACE


__all__ = [
    "ANNOTATION_ONLY_KEYS",
    "CR_ONLY_LABEL_KEYS",
    "DEFAULT_NAMESPACE",
    "matches",
    "resolution_selector",
    "resolve_namespace",
    "static_selector_findings",
]
