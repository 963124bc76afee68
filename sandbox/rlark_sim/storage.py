"""Where a container path lands: a node's hostPath folder, the S3 bucket (rlark-s3 PVCs) or scratch space."""

import os
import posixpath
import shlex

S3_CLASS = "rlark-s3"


class LocalSink:
    def __init__(self, root):
        self.root = root

    def describe(self):
        return "file://" + self.root

    def _path(self, rel):
        return os.path.join(self.root, rel) if rel else self.root

    def write(self, rel, data):
        path = self._path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)

    def append(self, rel, data):
        with open(self._path(rel), "ab") as fh:
            fh.write(data)

    def rename(self, src, dst):
        os.replace(self._path(src), self._path(dst))

    def exists(self, rel):
        return os.path.lexists(self._path(rel))

    def is_dir(self, rel):
        return os.path.isdir(self._path(rel))

    def read(self, rel):
        with open(self._path(rel), "rb") as fh:
            return fh.read()

    def list_dirs(self, rel):
        path = self._path(rel)
        return sorted(os.listdir(path)) if os.path.isdir(path) else []


class S3Sink:
    """Objects under `prefix` in the bucket; a "directory" exists when any key starts with it."""

    def __init__(self, client, bucket, prefix):
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._pending = {}

    def describe(self):
        return "s3://%s/%s" % (self.bucket, self.prefix)

    def _key(self, rel):
        return "/".join(p for p in (self.prefix, rel.strip("/")) if p)

    def write(self, rel, data):
        self.client.put_object(Bucket=self.bucket, Key=self._key(rel), Body=data)

    def append(self, rel, data):
        # S3 has no append: a "partial" object is a shorter object; rewrite with the full body.
        key = self._key(rel)
        try:
            head = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except Exception:
            head = b""
        self.client.put_object(Bucket=self.bucket, Key=key, Body=head + data)

    def rename(self, src, dst):
        self.client.copy_object(
            Bucket=self.bucket, Key=self._key(dst), CopySource={"Bucket": self.bucket, "Key": self._key(src)}
        )
        self.client.delete_object(Bucket=self.bucket, Key=self._key(src))

    def exists(self, rel):
        key = self._key(rel)
        resp = self.client.list_objects_v2(Bucket=self.bucket, Prefix=key, MaxKeys=2)
        return any(o["Key"] == key or o["Key"].startswith(key + "/") for o in resp.get("Contents", []))

    def is_dir(self, rel):
        key = self._key(rel) + "/"
        resp = self.client.list_objects_v2(Bucket=self.bucket, Prefix=key, MaxKeys=1)
        return bool(resp.get("Contents"))

    def read(self, rel):
        return self.client.get_object(Bucket=self.bucket, Key=self._key(rel))["Body"].read()

    def list_dirs(self, rel):
        key = self._key(rel) + "/"
        names = set()
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=key, Delimiter="/"):
            for cp in page.get("CommonPrefixes", []):
                names.add(cp["Prefix"][len(key) :].strip("/"))
        return sorted(names)


def read_env_file(path):
    """`export K=V` lines of .sandbox/env."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export ") :]
            if "=" not in line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            try:
                parts = shlex.split(value)
            except ValueError:
                parts = [value]
            out[key.strip()] = parts[0] if parts else ""
    return out


class S3Settings:
    def __init__(self, state_dir):
        env = read_env_file(os.path.join(state_dir, "env"))
        env.update({k: v for k, v in os.environ.items() if k.startswith(("RLARK_S3_", "AWS_"))})
        self.endpoint = env.get("RLARK_S3_ENDPOINT") or env.get("AWS_ENDPOINT_URL")
        self.bucket = env.get("RLARK_S3_BUCKET") or "checkpoints"
        self.access_key = env.get("AWS_ACCESS_KEY_ID")
        self.secret_key = env.get("AWS_SECRET_ACCESS_KEY")
        self.region = env.get("AWS_DEFAULT_REGION") or "us-east-1"
        self._client = None

    def client(self):
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "s3",
                endpoint_url=self.endpoint,
                aws_access_key_id=self.access_key,
                aws_secret_access_key=self.secret_key,
                region_name=self.region,
                config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
            )
        return self._client


def main_container(task):
    template = ((((task.get("spec") or {}).get("kubernetes") or {}).get("workload") or {}).get("template")) or {}
    for container in (template.get("spec") or {}).get("containers") or []:
        if container.get("name") == "main":
            return container, template.get("spec") or {}
    return {}, template.get("spec") or {}


def resolve_path(task, container_path, node_name, state_dir, s3, local_pod_name):
    """(sink, relpath) for a container path: longest covering volumeMount decides where bytes land."""
    container, pod_spec = main_container(task)
    path = posixpath.normpath(container_path)
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
    best = None
    for mount in container.get("volumeMounts") or []:
        mount_path = posixpath.normpath(mount.get("mountPath", ""))
        covers = path == mount_path or path.startswith(mount_path.rstrip("/") + "/")
        if covers and (best is None or len(mount_path) > len(best[0])):
            best = (mount_path, mount)
    if best is not None:
        mount_path, mount = best
        rest = posixpath.relpath(path, mount_path)
        rest = "" if rest == "." else rest
        if mount.get("subPath"):
            rest = posixpath.join(mount["subPath"], rest) if rest else mount["subPath"]
        volume = volumes.get(mount.get("name")) or {}
        if "hostPath" in volume:
            host = volume["hostPath"].get("path", "/").lstrip("/")
            return LocalSink(os.path.join(state_dir, "nodes", node_name, host)), rest
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"].get("claimName") or "pvc-%s-%s" % (
                task["metadata"]["name"],
                mount.get("name"),
            )
            storage_map = (((task.get("spec") or {}).get("kubernetes") or {}).get("workload") or {}).get(
                "pvcStorageMap"
            ) or {}
            if storage_map.get(volume["persistentVolumeClaim"].get("claimName") or claim) == S3_CLASS:
                return S3Sink(s3.client(), s3.bucket, ""), rest
            # Any other class: a per-cluster volume directory.
            ns = task["metadata"].get("namespace", "default")
            return LocalSink(os.path.join(state_dir, "pvcs", ns, claim)), rest
    # Not on a volume: the container's own (ephemeral) filesystem.
    return LocalSink(os.path.join(state_dir, "ephemeral", local_pod_name)), path.lstrip("/")
