# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module results (shown with -v) mask secret env values of a live Job; names, labels and states stay readable."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import stop_logs
from ansible_collections.rlark.ops.plugins.module_utils.redact import MASK
from ansible_collections.rlark.ops.plugins.modules import rlark_job, rlark_job_info
from rlark_fake_api import FakeClock, job, make_client
from test_jobs import seeded
from test_rlark_job_modules import run_module

# Set in a console on the live Job: the modules must not echo them.
PLANTED = {
    "DB_PASS": "hunter2",
    "GH_PAT": "ghp_" + "A1b2C3d4E5" * 4,
    "OPENAI_KEY": "sk-proj-" + "Zq9XwV8uT7" * 3,
    "SLACK_HOOK": "https://hooks.slack.com/services/T000/B000/" + "xYz123AbC" * 3,
    "WANDB_KEY": "0123456789abcdef" * 2 + "01234567",
}
PLAIN = {"TOKENIZERS_PARALLELISM": "false", "NCCL_SOCKET_IFNAME": "eth0"}


def secret_job(**kw):
    obj = job(**kw)
    obj["metadata"]["labels"] = {"team": "rl", "rlinf.io/pool": "a100"}
    container = obj["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": k, "value": v} for k, v in sorted(dict(PLANTED, **PLAIN).items())]
    return obj


def seeded_secret():
    api = seeded()
    api.add("jobs", secret_job())  # replaces the plain Job of the same name
    return api


def env_of(obj):
    container = obj["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container["env"]}


def assert_masked(result):
    text = json.dumps(result)
    for value in PLANTED.values():
        assert value not in text
    assert MASK in text


def test_rlark_job_masks_job_and_diff_but_keeps_names_labels_and_stopped(monkeypatch, capsys):
    api = seeded_secret()
    r = run_module(rlark_job, {"name": "demo", "state": "stopped"}, api, monkeypatch, diff=True, capsys=capsys)
    assert r["_rc"] == 0 and r["action"] == "stopped"
    assert_masked(r)
    assert env_of(r["job"]) == dict({k: MASK for k in PLANTED}, **PLAIN)
    assert r["job"]["metadata"]["name"] == "demo" and r["job"]["metadata"]["labels"]["team"] == "rl"
    assert r["job"]["spec"]["stopped"] is True and len(r["tasks"]) == 3
    # The stored Job is untouched: masking is for what is shown, never written back.
    assert env_of(api.get("jobs", "demo"))["DB_PASS"] == "hunter2"


def test_rlark_job_info_masks_resources(monkeypatch, capsys):
    api = seeded_secret()
    r = run_module(rlark_job_info, {"name": "demo"}, api, monkeypatch, capsys=capsys)
    assert_masked(r)
    entry = r["resources"][0]
    assert env_of(entry["job"])["TOKENIZERS_PARALLELISM"] == "false" and env_of(entry["job"])["GH_PAT"] == MASK
    assert entry["job"]["metadata"]["labels"] == {"team": "rl", "rlinf.io/pool": "a100"}
    assert sorted(t["metadata"]["name"] for t in entry["tasks"]) == ["demo-actor", "demo-env", "demo-rollout"]


def test_stop_with_logs_masks_secrets_echoed_in_logs():
    api = seeded_secret()
    clock = FakeClock()
    line = "export DB_PASS=hunter2; token %s" % PLANTED["GH_PAT"]

    def read():
        return {"demo-actor-0": "Global Step: 5/10\n%s\n" % line}

    def scale_down(method, path, body):
        for key in [k for k in api.objects if k[0] == "pods"]:
            del api.objects[key]
        for key in [k for k in api.objects if k[0] == "tasks"]:
            api.objects[key]["spec"]["kubernetes"]["workload"]["replicas"] = 0

    api.hooks.append(scale_down)
    out = stop_logs.stop_with_logs(
        make_client(api), "demo", read, "demo-actor-0", timeout=60, interval=1, clock=clock, sleep=clock.sleep
    )
    assert out["action"] == "stopped" and not out.get("failed")
    assert_masked(out)
    assert out["head_log"].splitlines()[0] == "Global Step: 5/10"
