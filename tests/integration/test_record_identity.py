"""Record headers name the Kubernetes identity that acted, as the API server reports it (SelfSubjectReview)."""

import getpass
import os

import kubernetes
import pytest
import yaml
from playbook_support import Workload

pytestmark = pytest.mark.sandbox


def apiserver_says(kubeconfig):
    """SelfSubjectReview through the kubernetes package, not through the collection's client."""
    api = kubernetes.config.new_client_from_config(config_file=kubeconfig)
    try:
        review = kubernetes.client.AuthenticationV1Api(api).create_self_subject_review(
            body=kubernetes.client.V1SelfSubjectReview()
        )
    finally:
        api.close()
    return review.status.user_info.username, list(review.status.user_info.groups or [])


def test_record_header_names_the_api_identity_and_the_controller_user(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    run = w.play("migrate.yml", kubeconfig=sandbox.kubeconfig_operator, args=("--tags", "preflight"))
    assert run.rc == 0, run
    (run_dir,) = os.listdir(os.path.join(w.records, w.name))
    with open(os.path.join(w.records, w.name, run_dir, "preflight.yml")) as fh:
        identity = yaml.safe_load(fh)["identity"]
    username, groups = apiserver_says(sandbox.kubeconfig_operator)
    assert username and "admin" not in username, username  # the operator, not the admin of the sandbox
    assert identity["api_user"] == username and identity["api_groups"] == groups, identity
    assert identity["user"] == getpass.getuser() and identity["host"], identity
    assert w.info() is None, "--tags preflight created the Job"
