"""Conformance of the project's CRDs (sandbox/crds) with RLark's own (../shared/upstream/rlark-crds).

Static checks on the files; they need no running sandbox. Skipped with a reason when ../shared is absent.
"""

import glob
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from helpers import ROOT, UPSTREAM_CRDS, UPSTREAM_MISSING

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the upstream files are 2 MB
PROJECT_CRDS = os.path.join(ROOT, "sandbox", "crds")
TEMPLATE = ".spec.tasks[].kubernetes.workload.template"


def load(directory):
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        with open(path) as fh:
            for doc in yaml.load_all(fh, Loader=LOADER):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    out[doc["metadata"]["name"]] = doc
    return out


def schema_of(crd):
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def field_paths(schema, path="", out=None):
    """{path: schema node}; `[]` marks array items, `{}` map values."""
    out = {} if out is None else out
    out[path] = schema
    for name, child in (schema.get("properties") or {}).items():
        field_paths(child, path + "." + name, out)
    if isinstance(schema.get("items"), dict):
        field_paths(schema["items"], path + "[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        field_paths(schema["additionalProperties"], path + "{}", out)
    return out


@pytest.fixture(scope="module")
def ours():
    crds = load(PROJECT_CRDS)
    assert crds, "no CRDs in sandbox/crds"
    return crds


@pytest.fixture(scope="module")
def upstream():
    if not os.path.isdir(UPSTREAM_CRDS):
        pytest.fail(UPSTREAM_MISSING, pytrace=False)
    return load(UPSTREAM_CRDS)


def test_same_kinds_scopes_names_and_subresources(ours, upstream):
    assert set(ours) == set(upstream)
    for name, crd in ours.items():
        up = upstream[name]
        assert crd["spec"]["group"] == up["spec"]["group"] == "rlinf.io"
        assert crd["spec"]["scope"] == up["spec"]["scope"], name
        for key in ("kind", "listKind", "plural", "singular", "shortNames"):
            assert crd["spec"]["names"].get(key) == up["spec"]["names"].get(key), (name, key)
        (version,), (up_version,) = crd["spec"]["versions"], up["spec"]["versions"]
        assert version["name"] == up_version["name"] == "v1alpha1"
        assert version["subresources"] == up_version["subresources"] == {"status": {}}
        assert version["served"] and version["storage"]


def test_upstream_extra_crds_are_domainpeer_and_addon_only_and_not_ours(ours):
    """RLark's DomainPeer and Addon (../shared/upstream/rlark-crds-extra) are installed with the upstream set
    only: the collection and rlark-sim never read or write them, so the project set leaves them out."""
    extra = load(UPSTREAM_CRDS + "-extra")
    assert {c["spec"]["names"]["kind"] for c in extra.values()} == {"DomainPeer", "Addon"}
    assert all(c["spec"]["group"] == "rlinf.io" for c in extra.values())
    assert not set(extra) & set(ours)


def test_documented_scopes_and_short_names(ours):
    want = {
        "jobs": ("Cluster", "rljob"),
        "tasks": ("Namespaced", "task"),
        "nodes": ("Namespaced", "rlnode"),
        "pods": ("Namespaced", "rlpod"),
        "workflows": ("Cluster", "rlwf"),
        "domains": ("Cluster", "rldomain"),
    }
    got = {
        c["spec"]["names"]["plural"]: (c["spec"]["scope"], c["spec"]["names"]["shortNames"][0]) for c in ours.values()
    }
    assert got == want


def test_every_field_of_ours_exists_upstream_with_the_same_type(ours, upstream):
    for name, crd in ours.items():
        mine, theirs = field_paths(schema_of(crd)), field_paths(schema_of(upstream[name]))
        missing = sorted(set(mine) - set(theirs))
        assert not missing, "%s: fields unknown upstream: %s" % (name, missing[:20])
        for path, node in mine.items():
            up = theirs[path]
            assert node.get("type") == up.get("type"), (name, path)
            assert bool(node.get("x-kubernetes-int-or-string")) == bool(up.get("x-kubernetes-int-or-string")), path
            assert sorted(node.get("required") or []) == sorted(up.get("required") or []), (name, path)
            assert node.get("x-kubernetes-list-map-keys") == up.get("x-kubernetes-list-map-keys"), (name, path)


def test_rlark_parts_match_upstream_completely(ours, upstream):
    """Outside the embedded corev1 pod template (a k8s version detail) the field sets are identical."""
    for name, crd in ours.items():
        mine = {p for p in field_paths(schema_of(crd)) if ".template." not in p}
        theirs = {p for p in field_paths(schema_of(upstream[name])) if ".template." not in p}
        assert mine == theirs, (name, sorted(mine ^ theirs))


def test_pruning_behaviour_like_rlark(ours):
    for name, crd in ours.items():
        text = yaml.safe_dump(crd)
        assert "x-kubernetes-preserve-unknown-fields" not in text, name
        assert "x-kubernetes-embedded-resource" not in text, name
    paths = field_paths(schema_of(ours["jobs.rlinf.io"]))
    assert paths[TEMPLATE + ".metadata"] == {"type": "object"}  # bare: template labels are pruned
    assert paths[".spec.tasks[]"]["required"] == ["role"]
    assert paths[TEMPLATE + ".spec"]["required"] == ["containers"]
    assert "name" in paths[TEMPLATE + ".spec.containers[]"]["required"]
    assert ".spec.tasks[].kubernetes.workload.template.spec.containers[].volumeMounts[].mountPath" in paths


def test_generated_crds_are_up_to_date():
    if not shutil.which("go"):
        pytest.fail("Go is not on PATH: it builds the sandbox and locates the pinned k8s core/v1 OpenAPI document.")
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "sandbox", "gen_crds.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
