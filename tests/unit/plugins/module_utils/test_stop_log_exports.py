# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Guarded stop: exports as files, the gateway's truncation refusing the stop, exports moved into the record."""

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import log_records, stop_logs
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import GATEWAY_TAIL_LINES, Export, LineSink
from rlark_fake_api import FakeClock, make_client
from test_jobs import seeded


def gateway_export(tmp_path, pod, lines, name="gw"):
    path = str(tmp_path / ("%s-%s.log" % (name, pod)))
    sink = LineSink(Export(pod, "gateway", path, window=True))
    sink.write(("\n".join(lines) + "\n").encode())
    export = sink.close()
    export.truncated = export.lines >= GATEWAY_TAIL_LINES
    return export


def full_export(tmp_path, pod, lines, name):
    path = str(tmp_path / ("%s-%s.log" % (name, pod)))
    sink = LineSink(Export(pod, "kubeconfig", path, cluster="a100"))
    sink.write(("\n".join(lines) + "\n").encode())
    return sink.close()


def pods_gone(api):
    def hook(method, path, query):
        if method == "GET" and "/tasks" in path and api.get("jobs", "demo")["spec"]["stopped"]:
            for key in [k for k in api.objects if k[0] == "pods"]:
                del api.objects[key]
            for key in [k for k in api.objects if k[0] == "tasks"]:
                api.objects[key]["spec"]["kubernetes"]["workload"]["replicas"] = 0

    return hook


def test_a_truncated_gateway_export_refuses_the_stop_with_its_finding(tmp_path):
    api = seeded()
    clock = FakeClock()
    client = make_client(api, clock=clock)
    window = ["line %d" % i for i in range(GATEWAY_TAIL_LINES)]
    out = stop_logs.stop_with_logs(
        client, "demo", lambda: {"demo-actor-0": gateway_export(tmp_path, "demo-actor-0", window)}, "demo-actor-0",
        export_dir=str(tmp_path), timeout=5, interval=1, clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    assert api.count("PATCH") == 0, "a truncated export must refuse before the patch"
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("log-export-truncated", "error")]
    assert "rlark_accept_truncated_logs" in out["msg"] and "patched_at" not in out
    assert out["log_exports"][0]["truncated"] and out["log_exports"][0]["truncation_accepted"] is False
    assert not out["logs_complete"]
    assert api.count("PATCH") == 0 and api.get("jobs", "demo")["spec"]["stopped"] is False


def test_an_accepted_truncation_stops_and_the_export_says_so(tmp_path):
    api = seeded()
    clock = FakeClock()
    client = make_client(api, clock=clock)
    api.hooks.append(pods_gone(api))
    window = ["line %d" % i for i in range(GATEWAY_TAIL_LINES)]
    out = stop_logs.stop_with_logs(
        client, "demo", lambda: {"demo-actor-0": gateway_export(tmp_path, "demo-actor-0", window)}, "demo-actor-0",
        export_dir=str(tmp_path), accept_truncated=True, timeout=60, interval=1, clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    assert out["action"] == "stopped" and not out.get("findings")
    (export,) = out["log_exports"]
    assert export["truncated"] and export["truncation_accepted"] is True and export["lines"] == GATEWAY_TAIL_LINES
    assert not out["logs_complete"]


def test_a_full_history_export_replaces_the_file_and_keeps_the_longer_read(tmp_path):
    api = seeded()
    clock = FakeClock()
    client = make_client(api, clock=clock)
    api.hooks.append(pods_gone(api))
    reads = iter(
        [
            ["a", "b"],
            ["a", "b", "c"],  # the poll after the patch: the pod wrote one more line
            ["a"],  # a shorter read (a new container) never replaces what was read
        ]
    )
    count = iter(range(100))

    def read():
        return {"demo-actor-0": full_export(tmp_path, "demo-actor-0", next(reads, ["a"]), "r%d" % next(count))}

    out = stop_logs.stop_with_logs(
        client, "demo", read, "demo-actor-0", export_dir=str(tmp_path), timeout=60, interval=1, clock=clock,
        sleep=clock.sleep,
    )  # fmt: skip
    (export,) = out["log_exports"]
    assert export["lines"] == 3 and export["source"] == "kubeconfig" and export["cluster"] == "a100"
    assert Path(export["path"]).read_text() == "a\nb\nc\n" and out["logs_complete"]
    assert any("fewer than the 3 read before" in e for e in out["log_errors"])
    assert sorted(os.listdir(str(tmp_path))) == [os.path.basename(export["path"])], "replaced reads are removed"


def test_exports_move_into_the_record_directory_once(tmp_path):
    source_dir = tmp_path / "exports"
    source_dir.mkdir()
    export = full_export(source_dir, "demo-actor-0", ["x"] * 5, "r")
    records = tmp_path / "records"
    run_dir = records / "demo" / "20261201T010203Z-stop-abc123"
    run_dir.mkdir(parents=True)
    written = log_records.move_exports(
        str(records), "demo", "20261201T010203Z-stop-abc123", [{"pod": "demo-actor-0", "path": export.path}], 0o640
    )
    assert written == [str(run_dir / "log-demo-actor-0.log")]
    assert Path(written[0]).read_text() == "x\n" * 5 and oct(os.stat(written[0]).st_mode & 0o777) == "0o640"
    assert not source_dir.exists(), "the stop's export directory is removed once empty"
