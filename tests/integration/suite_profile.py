"""Where an integration test's wall time goes (issue #29): written when RLARK_SUITE_PROFILE names a file.

Per test, as a JSON line: ``setup`` (fixtures: the sandbox start lands on the first test of a session),
``call`` and ``teardown`` seconds, and within the call the main thread's time blocked in ``time.sleep``
(``waits``: polling for the sandbox or the simulator) and in child processes (``children``:
ansible-playbook, ansible-runner, sandboxctl). The rest of the call is API reads, file reads and
assertions. hack/suite_profile.py turns the files of a run into bench/results/suite-profile.md.
"""

import contextlib
import json
import os
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
        self.depth = 0

    @contextlib.contextmanager
    def timing(self, field):
        # Only the outermost blocking call of the main thread counts (subprocess.run waits through Popen).
        if threading.current_thread() is not _MAIN or self.depth:
            yield
            return
        self.depth += 1
        start = time.perf_counter()
        try:
            yield
        finally:
            setattr(self, field, getattr(self, field) + time.perf_counter() - start)
            self.depth -= 1


def _wrap(clock, field, func):
    def wrapped(*args, **kwargs):
        with clock.timing(field):
            return func(*args, **kwargs)

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
    subprocess.Popen.wait = _wrap(clock, "children", saved[1])
    subprocess.Popen.communicate = _wrap(clock, "children", saved[2])
    try:
        yield
    finally:
        time.sleep, subprocess.Popen.wait, subprocess.Popen.communicate = saved
        _TESTS.setdefault(item.nodeid, {}).update(waits=round(clock.waits, 3), children=round(clock.children, 3))


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
