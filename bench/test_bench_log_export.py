# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Peak RSS of exporting a 200 MB pod log stays under 100 MB (issue 13: logs stream, never held whole).

The export runs in a fresh Python process (the collection's ``export_logs``); its peak resident set
(``VmHWM``) is the figure. Source ``kubeconfig``: the log streamed over HTTP by a separate server
process that writes it like the kubelet with ``timestamps=true``, reached through kube.py's client
with the token of a kubeconfig. Every line is redacted on the way (the slow part: minutes).
"""

import json
import os
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from figures import save, within_budget  # noqa: E402

LOG_BYTES = 200 * 1024 * 1024
BUDGET_MB = 100.0
LINE = "Global Step: %08d/99999999 | actor/loss 0.123456 | rollout/reward 0.987654 | time/step 1.234 s | lr=0.0001"

EXPORT = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from ansible_collections.rlark.ops.plugins.module_utils.joblogs import export_logs
    kwargs = json.loads(sys.argv[2])
    exports = export_logs(**kwargs)
    fields = {pod: e.fields() for pod, e in exports.items()}
    with open("/proc/self/status") as fh:
        peak = [l for l in fh if l.startswith("VmHWM:")][0].split()[1]
    print(json.dumps({"exports": fields, "peak_kb": int(peak)}))
    """
)

# A log server in its own process: its memory is not the exporter's.
SERVER = textwrap.dedent(
    """
    import sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    line, total = sys.argv[1], int(sys.argv[2])
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass
        def do_GET(self):
            assert self.headers.get("Authorization") == "Bearer bench-token"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            sent, i, batch = 0, 0, []
            while sent < total:
                text = "2026-12-01T01:00:00.%09dZ " % i + (line % i) + "\\n"
                batch.append(text)
                sent += len(text)
                i += 1
                if len(batch) == 512:
                    self.wfile.write("".join(batch).encode())
                    batch = []
            self.wfile.write("".join(batch).encode())
            self.close_connection = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """
)


def run_export(**kwargs):
    collections = os.path.join(ROOT, ".build", "collections")
    out = subprocess.run(
        [sys.executable, "-c", EXPORT, collections, json.dumps(kwargs)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_bench_export_of_a_200mb_log_stays_under_100mb_rss(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, LINE, str(LOG_BYTES)], stdout=subprocess.PIPE, text=True
    )  # fmt: skip
    try:
        port = int(server.stdout.readline())
        kubeconfig = tmp_path / "dp.kubeconfig"
        kubeconfig.write_text(
            json.dumps(
                {
                    "current-context": "dp",
                    "clusters": [{"name": "dp", "cluster": {"server": "http://127.0.0.1:%d" % port}}],
                    "users": [{"name": "u", "user": {"token": "bench-token"}}],
                    "contexts": [{"name": "dp", "context": {"cluster": "dp", "user": "u"}}],
                }
            )
        )
        started = time.monotonic()
        streamed = run_export(
            source="kubeconfig",
            job_name="bench-big",
            dest_dir=str(out),
            pod_names=["bench-big-actor-0"],
            kubeconfig=str(kubeconfig),
        )
        seconds = time.monotonic() - started
    finally:
        server.kill()
        server.wait()
    exported = streamed["exports"]["bench-big-actor-0"]
    assert exported["timestamps_from"] == "kubelet"
    stamps = exported["lines"] * len("2026-12-01T01:00:00.000000000Z ")  # the kubelet times, cut from the export
    assert exported["bytes"] + stamps >= LOG_BYTES, exported  # every byte the server sent is accounted for
    peak_mb = streamed["peak_kb"] / 1024.0
    ok = peak_mb < BUDGET_MB
    save(
        "log_export.json",
        {
            "log_mb": LOG_BYTES // (1024 * 1024),
            "source": "kubeconfig (streamed over HTTP, kube.py client)",
            "lines": exported["lines"],
            "exported_mb": round(exported["bytes"] / 1048576.0, 1),
            "peak_rss_mb": round(peak_mb, 1),
            "seconds": round(seconds, 1),
            "budget_mb": BUDGET_MB,
            "within_budget": ok,
        },
    )
    assert within_budget(ok), peak_mb
