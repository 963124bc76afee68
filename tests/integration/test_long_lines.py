"""Long log lines on the live sandbox (issue 24, item 5): a trainer printing 8 kB and 1 MB lines.

rlark-sim's SIM_LONG_LINE_BYTES makes the trainer print one line of that size at start-up (before
"Executing run script...", which verify waits for) and every SIM_LONG_LINE_EVERY steps. migrate.yml
must verify within rlark_verify_timeout, and guarded_stop.yml must stop the Job with every long line
complete in the exported log of the stop record. The files are read with plain file reads, and the
trainer's own log file (rlark-sim's, not the collection's reader) is the reference.
"""

import os

import pytest
from independent import get_job, job_pods
from playbook_support import Workload, outcome_table

pytestmark = pytest.mark.sandbox
VERIFY_TIMEOUT = 120
MARK = b"[sim-long] "


def _long_lines(size, every):
    def mutate(m, p):
        env = m["roles"][0]["env"]
        more = {"SIM_LONG_LINE_BYTES": str(size), "SIM_LONG_LINE_EVERY": str(every)}
        env[:] = [e for e in env if e["name"] not in more] + [{"name": k, "value": v} for k, v in more.items()]

    return mutate


def long_lines_in(path):
    with open(path, "rb") as fh:
        return [line for line in fh.read().split(b"\n") if line.startswith(MARK)]


@pytest.mark.parametrize("size,every", [(8192, 1), (1 << 20, 3)], ids=["8kB", "1MB"])
def test_long_lines_verify_in_time_and_are_exported_whole_by_the_stop(sandbox, tmp_path, size, every):
    w = Workload(sandbox, tmp_path, mutate=_long_lines(size, every))
    try:
        run = w.play("migrate.yml", extra={"rlark_verify_timeout": VERIFY_TIMEOUT})
        assert run.rc == 0, run
        verify = w.records_of("verify")[-1]["data"]
        assert verify["ok"] and verify["running"], verify
        assert "Executing run script..." in verify["signals"]["seen"]
        w.wait_steps(1)

        done = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
        assert done.rc == 0, done
        assert " stopped " in next(r for r in outcome_table(done).splitlines() if r.startswith(w.name + " "))
        assert get_job(sandbox, w.name)["spec"]["stopped"] is True and job_pods(sandbox, w.name) == []

        stamp_dir = os.path.join(w.records, w.name, sorted(os.listdir(os.path.join(w.records, w.name)))[-1])
        exported = long_lines_in(os.path.join(stamp_dir, "log-%s-actor-0.log" % w.name))
        source = long_lines_in(os.path.join(sandbox.logs_dir, w.name, "%s-actor-0.log" % w.name))
        # the start-up line and at least one step's line, each whole: its size and its end marker
        assert len(exported) >= 2, [line[:60] for line in exported]
        for line in exported:
            step = int(line.split(b" ")[2])
            assert len(line) == size and line.endswith(b" |end step %d" % step), (len(line), line[-40:])
        # nothing masked or cut: the lines are the trainer's own, in its order
        assert exported == source[: len(exported)]
    finally:
        w.cleanup()
