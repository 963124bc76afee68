"""Generate the project's RLark CRDs (sandbox/crds/*.yaml).

The RLark-specific parts (Job, Task, Node, Pod, Workflow, Domain) are written by hand below from the
API facts in docs/rlark-platform.md. The embedded pod template (`kubernetes.workload.template.spec`, a
full corev1 PodSpec) is generated from the kube-apiserver's own OpenAPI v3 document for core/v1, taken
from the pinned k8s.io/kubernetes module (api/openapi-spec/v3/api__v1_openapi.json), and converted to
a structural CRD schema the way controller-gen would: descriptions, enums and patch-strategy hints
dropped, Quantity/IntOrString as int-or-string, ObjectMeta as a bare object (so template labels and
annotations are pruned, like RLark). No x-kubernetes-preserve-unknown-fields anywhere: unknown fields
are pruned, and rejected under fieldValidation=Strict.

Usage:  python sandbox/gen_crds.py [--openapi FILE] [--check]
The output is committed; --check fails when it is stale.
"""

import argparse
import copy
import json
import pathlib
import subprocess
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
OUT_DIR = HERE / "crds"
GROUP = "rlinf.io"
VERSION = "v1alpha1"
CORE = "io.k8s.api.core.v1."
META = "io.k8s.apimachinery.pkg.apis.meta.v1."

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": True,
}
INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
DATE_TIME = {"type": "string", "format": "date-time"}
BARE_OBJECT = {"type": "object"}
# Named OpenAPI definitions that do not translate field by field.
SPECIAL_DEFS = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": QUANTITY,
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": INT_OR_STRING,
    META + "Time": DATE_TIME,
    META + "MicroTime": DATE_TIME,
    # Embedded ObjectMeta without generateEmbeddedObjectMeta: labels/annotations are pruned.
    META + "ObjectMeta": BARE_OBJECT,
}
KEEP_KEYS = (
    "type",
    "format",
    "required",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)


def default_openapi_path():
    """The core/v1 OpenAPI v3 document shipped in the pinned k8s.io/kubernetes module."""
    moddir = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"],
        cwd=HERE / "tools",
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return pathlib.Path(moddir) / "api/openapi-spec/v3/api__v1_openapi.json"


def _is_zero_default(value):
    return value in ("", False, 0, {}, []) and value is not True


def prune_zero_defaults(node, keep=()):
    """Drop zero-value defaults, as controller-gen would not emit them.

    openapi-gen emits a zero default ("", false, 0, {}) for every non-pointer field; controller-gen keeps
    only explicit +default markers (non-zero in core/v1: protocol TCP, fsType ext4, ...) plus the ones a
    structural schema needs: a list-map key that is not required must have a default.
    """
    props = node.get("properties", {})
    for name, child in props.items():
        if "default" in child and _is_zero_default(child["default"]) and name not in keep:
            del child["default"]
        prune_zero_defaults(child)
    if "items" in node:
        items = node["items"]
        keys = [k for k in node.get("x-kubernetes-list-map-keys", []) if k not in items.get("required", [])]
        if "default" in items and _is_zero_default(items["default"]):
            del items["default"]
        prune_zero_defaults(items, keep=keys)
    if isinstance(node.get("additionalProperties"), dict):
        extra = node["additionalProperties"]
        if "default" in extra and _is_zero_default(extra["default"]):
            del extra["default"]
        prune_zero_defaults(extra)
    return node


class PodSpecConverter:
    """Turns OpenAPI v3 component schemas into structural CRD schemas, inlining every $ref."""

    def __init__(self, schemas):
        self.schemas = schemas

    def definition(self, name, stack=()):
        if name in SPECIAL_DEFS:
            return copy.deepcopy(SPECIAL_DEFS[name])
        if name in stack:
            raise ValueError("recursive schema %s cannot be inlined" % " -> ".join((*stack, name)))
        return self.convert(self.schemas[name], (*stack, name))

    def convert(self, node, stack=()):
        if "$ref" in node:
            return self.definition(node["$ref"].rsplit("/", 1)[-1], stack)
        if "allOf" in node:
            (only,) = node["allOf"]
            out = self.convert(only, stack)
            self._merge_default(out, node)
            return out
        out = {k: copy.deepcopy(node[k]) for k in KEEP_KEYS if k in node}
        if out.get("format") == "int-or-string":
            del out["format"]
        if "properties" in node:
            out["properties"] = {k: self.convert(v, stack) for k, v in node["properties"].items()}
            out.setdefault("type", "object")
        if "items" in node:
            out["items"] = self.convert(node["items"], stack)
        if isinstance(node.get("additionalProperties"), dict):
            out["additionalProperties"] = self.convert(node["additionalProperties"], stack)
        self._merge_default(out, node)
        if "type" not in out and "x-kubernetes-int-or-string" not in out:
            raise ValueError("untyped schema under %s" % "/".join(stack))
        return out

    @staticmethod
    def _merge_default(out, node):
        if "default" in node and node["default"] != {}:
            out["default"] = copy.deepcopy(node["default"])


def pod_template_schema(openapi_file):
    schemas = json.loads(pathlib.Path(openapi_file).read_text())["components"]["schemas"]
    conv = PodSpecConverter(schemas)
    return {
        "type": "object",
        "properties": {"metadata": dict(BARE_OBJECT), "spec": prune_zero_defaults(conv.definition(CORE + "PodSpec"))},
    }


def s(t="string", **kw):
    return dict(type=t, **kw)


def obj(required=None, **props):
    out = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    return out


def arr(items):
    return {"type": "array", "items": items}


def str_map():
    return {"type": "object", "additionalProperties": s()}


def qty_map():
    return {"type": "object", "additionalProperties": copy.deepcopy(QUANTITY)}


CONDITIONS = arr(
    obj(
        required=["lastTransitionTime", "message", "reason", "status", "type"],
        lastTransitionTime=dict(DATE_TIME),
        message=s(maxLength=32768),
        observedGeneration=s("integer", format="int64", minimum=0),
        reason=s(maxLength=1024, minLength=1, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        status=s(enum=["True", "False", "Unknown"]),
        type=s(
            maxLength=316,
            pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        ),
    )
)
NAME_VALUE = arr(obj(name=s(), value=s()))
EVENTS = arr(
    obj(
        required=["reason", "type"],
        count=s("integer", format="int32"),
        lastTime=dict(DATE_TIME),
        message=s(),
        objectKind=s(),
        objectName=s(),
        reason=s(),
        source=s(),
        type=s(),
    )
)
PULL_PROGRESS = arr(
    obj(
        required=["downloaded", "image", "speed", "status", "total"],
        downloaded=s("integer", format="int64"),
        image=s(),
        message=s(),
        speed=s("number"),
        status=s(),
        total=s("integer", format="int64"),
    )
)


def task_spec(pod_template, job_template=False):
    """TaskSpec; a Job's task template adds `name` and `head` (JobTaskTemplate inlines TaskSpec)."""
    props = dict(
        agentType=s(),
        role=s(),
        domain=s(),
        sshPublicKey=s(),
        downstreamName=s(),
        nodeSelector=str_map(),
        kubernetes=obj(
            workload=obj(
                kind=s(),
                replicas=s("integer", format="int32"),
                template=copy.deepcopy(pod_template),
                pvcStorageMap=str_map(),
            )
        ),
        docker=obj(
            containers=arr(
                obj(
                    name=s(),
                    image=s(),
                    command=arr(s()),
                    args=arr(s()),
                    environment=copy.deepcopy(NAME_VALUE),
                    volumes=arr(obj(source=s(), target=s())),
                )
            )
        ),
        raw=obj(artifact=s(), entrypoint=arr(s()), environment=copy.deepcopy(NAME_VALUE)),
        tensorBoardDir=s(),
        prepareScript=s(),
        runScript=s(),
    )
    if job_template:
        props.update(name=s(), head=s("boolean"))
    return obj(required=["role"], **props)


def job_spec(pod_template):
    return obj(domain=s(), stopped=s("boolean"), sshPublicKey=s(), tasks=arr(task_spec(pod_template, True)))


def phase_list():
    return arr(obj(name=s(), phase=s(), message=s()))


def root(spec, status):
    return obj(apiVersion=s(), kind=s(), metadata=dict(BARE_OBJECT), spec=spec, status=status)


def crd(kind, plural, short, scope, schema, columns):
    age = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "%s.%s" % (plural, GROUP),
            "annotations": {"rlark.ops/generated-by": "sandbox/gen_crds.py"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": kind + "List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short],
            },
            "scope": scope,
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [*columns, age],
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def column(name, path):
    return {"name": name, "type": "string", "jsonPath": path}


def build_all(openapi_file):
    pod_template = pod_template_schema(openapi_file)
    phase = column("Phase", ".status.phase")
    job_status = obj(
        phase=s(),
        tasks=phase_list(),
        conditions=copy.deepcopy(CONDITIONS),
        startTime=dict(DATE_TIME),
        endTime=dict(DATE_TIME),
    )
    task_status = obj(
        phase=s(),
        message=s(),
        observedNodes=arr(s()),
        pullProgress=copy.deepcopy(PULL_PROGRESS),
        events=copy.deepcopy(EVENTS),
        tensorBoardProxy=s(),
        conditions=copy.deepcopy(CONDITIONS),
        startTime=dict(DATE_TIME),
        completionTime=dict(DATE_TIME),
        retryCount=s("integer", format="int32"),
    )
    node_status = obj(
        phase=s(),
        reason=s(),
        nodeInfo=obj(agentVersion=s(), architecture=s(), kernelVersion=s(), operatingSystem=s()),
        addresses=arr(obj(required=["address", "type"], address=s(), type=s())),
        diskPressure=s("boolean"),
        capacity=qty_map(),
        allocatable=qty_map(),
        used=qty_map(),
        pullProgress=copy.deepcopy(PULL_PROGRESS),
        events=copy.deepcopy(EVENTS),
    )
    workflow_spec = obj(jobTemplates=arr(obj(name=s(), dependencies=arr(s()), spec=job_spec(pod_template))))
    workflow_status = obj(
        phase=s(),
        jobs=phase_list(),
        conditions=copy.deepcopy(CONDITIONS),
        startTime=dict(DATE_TIME),
        endTime=dict(DATE_TIME),
    )
    pod_spec = obj(domain=s(), podName=s(), podNamespace=s(), taskName=s(), taskNamespace=s())
    pod_status = obj(phase=s(), node=s(), ip=s(), message=s())
    domain_status = obj(ipAllocations=arr(obj(ip=s(), job=s(), pod=s(), task=s())))
    return {
        "jobs": crd("Job", "jobs", "rljob", "Cluster", root(job_spec(pod_template), job_status), [phase]),
        "tasks": crd(
            "Task",
            "tasks",
            "task",
            "Namespaced",
            root(task_spec(pod_template), task_status),
            [column("Agent", ".spec.agentType"), phase],
        ),
        "nodes": crd(
            "Node",
            "nodes",
            "rlnode",
            "Namespaced",
            root(obj(agentType=s(), unschedulable=s("boolean")), node_status),
            [phase],
        ),
        "pods": crd(
            "Pod", "pods", "rlpod", "Namespaced", root(pod_spec, pod_status), [column("Node", ".status.node"), phase]
        ),
        "workflows": crd("Workflow", "workflows", "rlwf", "Cluster", root(workflow_spec, workflow_status), [phase]),
        "domains": crd("Domain", "domains", "rldomain", "Cluster", root(obj(cidr=s()), domain_status), []),
    }


def render(doc):
    header = "# Generated by sandbox/gen_crds.py from the RLark API facts and k8s core/v1 OpenAPI. Do not edit.\n"
    return header + yaml.safe_dump(doc, sort_keys=True, width=200)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--openapi", help="core/v1 OpenAPI v3 JSON (default: from the k8s.io/kubernetes module)")
    parser.add_argument("--check", action="store_true", help="exit 1 if sandbox/crds is stale")
    args = parser.parse_args(argv)
    docs = build_all(args.openapi or default_openapi_path())
    stale = []
    OUT_DIR.mkdir(exist_ok=True)
    for plural, doc in docs.items():
        path = OUT_DIR / ("%s.%s.yaml" % (plural, GROUP))
        text = render(doc)
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path.name)
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print("stale CRDs (run python sandbox/gen_crds.py): %s" % ", ".join(stale), file=sys.stderr)
        return 1
    print("written: %s" % ", ".join(stale) if stale else "sandbox/crds is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
