"""Where an integration test's wall time goes (issue #29): written when RLARK_SUITE_PROFILE names a file.

Per test, as a JSON line: ``setup`` (fixtures: the sandbox start lands on the first test of a session),
``call`` and ``teardown`` seconds, and within the call the main thread's time blocked in ``time.sleep``
(``waits``: polling for the sandbox or the simulator) and in child processes (``children``:
ansible-playbook, ansible-runner, sandboxctl), with the CPU seconds those children used
(``children_cpu``, user + system, their own children included) and, per program (``runs``: ansible-playbook
by playbook name), how many ran and their wall seconds. The rest of the call is API reads, file reads and
assertions. hack/suite_profile.py turns the files of a run into bench/results/suite-profile.md.
"""

import contextlib
import json
import os
import resource
import subprocess
import threading
import time

import pytest

PATH = os.environ.get("RLARK_SUITE_PROFILE")
_MAIN = threading.main_thread()


class _Clock:
    def __init__(self):
        self.waits = 0.0
        self.children = 0.0
        self.children_cpu = 0.0
        self.runs = {}  # program -> [count, wall seconds]
        self.depth = 0

    @contextlib.contextmanager
    def timing(self, field, program=None, first=True):
        # Only the outermost blocking call of the main thread counts (subprocess.run waits through Popen).
        if threading.current_thread() is not _MAIN or self.depth:
            yield
            return
        self.depth += 1
        start, cpu = time.perf_counter(), _children_cpu()
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            setattr(self, field, getattr(self, field) + seconds)
            if program is not None:
                self.children_cpu += _children_cpu() - cpu
                run = self.runs.setdefault(program, [0, 0.0])
                run[0], run[1] = run[0] + first, run[1] + seconds
            self.depth -= 1


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def program_of(args):
    """`ansible-playbook guarded_stop.yml`, `sandboxctl.py up`, `ansible-rulebook`: what a child process ran."""
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else str(args).split()
    names = [os.path.basename(a) for a in argv[:3]]
    if names and names[0].startswith("python") and len(names) > 1 and not names[1].startswith("-"):
        names = names[1:]  # a script run by Python is named by the script
    if not names:
        return "?"
    if names[0] == "ansible-playbook":
        plays = [a for a in argv if a.endswith((".yml", ".yaml"))]
        shipped = plays and os.sep + "playbooks" + os.sep in plays[0]
        return "ansible-playbook " + (os.path.basename(plays[0]) if shipped else "(a test's own play)")
    if names[0] == "sandboxctl.py":
        verbs = [a for a in argv if a in ("up", "down", "status", "restart", "kill")]
        return "sandboxctl.py " + (verbs[0] if verbs else "?")
    return names[0]


def _wrap(clock, field, func):
    def wrapped(*args, **kwargs):
        with clock.timing(field):
            return func(*args, **kwargs)

    return wrapped


def _wrap_child(clock, func):
    def wrapped(self, *args, **kwargs):
        # subprocess.run waits again on leaving its `with Popen`: one run, however often it is waited for
        first = not getattr(self, "_profiled", False)
        self._profiled = True
        with clock.timing("children", program_of(self.args), first):
            return func(self, *args, **kwargs)

    return wrapped


_TESTS = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not PATH:
        yield
        return
    clock = _Clock()
    saved = (time.sleep, subprocess.Popen.wait, subprocess.Popen.communicate)
    time.sleep = _wrap(clock, "waits", saved[0])
    subprocess.Popen.wait = _wrap_child(clock, saved[1])
    subprocess.Popen.communicate = _wrap_child(clock, saved[2])
    try:
        yield
    finally:
        time.sleep, subprocess.Popen.wait, subprocess.Popen.communicate = saved
        _TESTS.setdefault(item.nodeid, {}).update(
            waits=round(clock.waits, 3),
            children=round(clock.children, 3),
            children_cpu=round(clock.children_cpu, 3),
            runs={k: [n, round(t, 3)] for k, (n, t) in clock.runs.items()},
        )


def pytest_runtest_logreport(report):
    if not PATH:
        return
    profile = _TESTS.setdefault(report.nodeid, {})
    profile[report.when] = round(report.duration, 3)
    if report.failed:
        profile["outcome"] = "failed"
    if report.when == "teardown":
        profile = dict(_TESTS.pop(report.nodeid), test=report.nodeid)
        profile.setdefault("outcome", "passed" if "call" in profile else "skipped")
        os.makedirs(os.path.dirname(os.path.abspath(PATH)), exist_ok=True)
        with open(PATH, "a") as handle:
            handle.write(json.dumps(profile) + "\n")
