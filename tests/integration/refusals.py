"""Which finding stopped a playbook run: read from the JSON results, never from loose text.

A refusal test asserts the id and severity of the finding that stopped the run (the failed task and the
error findings the run produced), so that a run that failed for another reason cannot pass it.
"""


def _walk(value, out):
    if isinstance(value, dict):
        if isinstance(value.get("id"), str) and value.get("severity") in ("error", "warning"):
            key = (value["id"], value["severity"], value.get("path", ""), value.get("message", ""))
            if key not in out:
                out[key] = value
            return
        for item in value.values():
            _walk(item, out)
    elif isinstance(value, list):
        for item in value:
            _walk(item, out)


def findings(run, upto_failure=True):
    """Every distinct finding dict in the task results (up to the failed task), in the order seen."""
    out = {}
    for entry in (run.data or {}).get("tasks", []):
        _walk(entry["result"], out)
        if upto_failure and entry["status"] == "failed":
            break
    return list(out.values())


def failed_task(run):
    """Name of the first task that failed (a role may rescue it and the play fail later), or None."""
    failed = [t["task"] for t in (run.data or {}).get("tasks", []) if t["status"] in ("failed", "unreachable")]
    return failed[0] if failed else None


def stopping_errors(run):
    """Sorted distinct (id, severity) of the error findings the run produced before it failed."""
    return sorted({(f["id"], f["severity"]) for f in findings(run) if f["severity"] == "error"})


def task_result(run, name, host=None):
    """The result of the last task called ``name`` on any host (or ``host``); KeyError when it did not run.

    guarded_stop.yml runs its role on one in-memory host per Job, not on localhost.
    """
    tasks = [t for t in (run.data or {}).get("tasks", []) if host is None or t["host"] == host]
    hits = [t["result"] for t in tasks if t["task"] == name]
    if not hits:
        raise KeyError("task %r did not run; tasks: %s" % (name, [(t["host"], t["task"]) for t in tasks]))
    return hits[-1]
