"""Processes the sandbox starts: launch in their own process group, identify by pid + start time, stop."""

import contextlib
import os
import signal
import socket
import subprocess
import time


def free_port(preferred=None):
    """A free TCP port on 127.0.0.1; `preferred` is kept when it is still free (stable URLs across restarts)."""
    for port in ([preferred] if preferred else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError("no free port on 127.0.0.1")


def _stat_fields(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            raw = fh.read()
    except OSError:
        return None
    # comm may contain spaces/parens: fields restart after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def start_time(pid):
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def alive(proc):
    """True when the recorded process still runs (same pid AND same start time, not a zombie)."""
    if not proc:
        return False
    fields = _stat_fields(proc["pid"])
    if not fields or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == proc["start"]


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def group_pids(pgid):
    """Every live pid in process group `pgid` (the service and anything it forked)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                pids.append(int(entry))
    return pids


def launch(name, argv, log_path, env=None, cwd=None):
    """Start `argv` detached in a new session (pgid = pid), output appended to `log_path`."""
    # The services run no collection code: under `make coverage` they are not traced (that only slows them).
    env = {k: v for k, v in (os.environ if env is None else env).items() if not k.startswith("COVERAGE_")}
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(("\n=== %s starting %s: %s\n" % (time.strftime("%F %T"), name, " ".join(argv))).encode())
        log.flush()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    return {"pid": proc.pid, "start": start_time(proc.pid), "argv": argv, "log": log_path, "_popen": proc}


def stop(proc, timeout=15.0):
    """SIGTERM the process group of a recorded process, SIGKILL after `timeout`; returns when all are gone."""
    stop_together([proc], timeout)


def stop_together(recorded, timeout=15.0):
    """`stop` for several recorded processes at once: each kube-apiserver's graceful stop takes about a second
    of waiting, which one after another is the most of a sandbox's `down`."""
    groups = {proc["pid"]: proc for proc in recorded if alive(proc)}
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while groups and time.monotonic() < deadline:
            for pgid, proc in list(groups.items()):
                popen = proc.get("_popen")
                if popen is not None:
                    popen.poll()  # reap our own child so it does not linger as a zombie
                if not group_pids(pgid):
                    del groups[pgid]
            if groups:
                time.sleep(0.1)
        if not groups:
            return
    names = ", ".join("%d (%s)" % (pgid, proc["argv"][0]) for pgid, proc in groups.items())
    raise RuntimeError("process group(s) %s survived SIGKILL" % names)


def kill_leftovers(proc):
    """SIGKILL what is left of a dead recorded process's group (children that outlived their leader).

    Linux never hands out a pid still in use as a process group id, so the group's members are ours.
    """
    if not proc or alive(proc):
        return
    with contextlib.suppress(ProcessLookupError):
        if group_pids(proc["pid"]):
            os.killpg(proc["pid"], signal.SIGKILL)


def kill(proc, timeout=10.0):
    """SIGKILL the process group of a live recorded process (a crash, for fault tests); returns when it is gone."""
    if not alive(proc):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc["pid"], signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while alive(proc) or group_pids(proc["pid"]):
        if time.monotonic() > deadline:
            raise RuntimeError("process group %d (%s) survived SIGKILL" % (proc["pid"], proc["argv"][0]))
        time.sleep(0.05)
    return True
