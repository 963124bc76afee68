"""Simulated RLinf run inside each head pod: RLinf's log lines, steps, checkpoints, resume and kill.

One thread per head Pod CR. All state lives in memory plus the files it writes, so a restarted
simulator behaves like a restarted container: the run script reruns from scratch (resuming from its
`runner.resume_dir` again) and appends to the same log file.
"""

import logging
import os
import threading
import time
import zipfile
from io import BytesIO

from . import layouts, metrics, podlog
from .agent import ANN_STOPPING
from .overrides import TrainerConfig, container_env, parse_overrides
from .storage import resolve_path
from .workload import LOCAL_NAME_LABEL, TASK_NAME_LABEL, effective_stopped, is_head, ordinal_of, workload_of

log = logging.getLogger("rlark_sim.trainer")


class Killed(Exception):
    pass


def checkpoint_problems(cfg, sink, base, step):
    """Missing or broken entries of global_step_<step> by the completeness table (empty = complete)."""
    problems = []
    for rel in layouts.required_entries(cfg, step):
        full = "%s/%s" % (base, rel) if base else rel
        if not sink.exists(full):
            problems.append("missing " + rel)
            continue
        if rel.endswith(".pt"):
            data = sink.read(full)
            if not zipfile.is_zipfile(BytesIO(data)):
                problems.append("truncated " + rel)
        if rel.endswith("latest_checkpointed_iteration.txt") and sink.read(full).decode().strip() != str(step):
            problems.append("tracker of %s != %d" % (rel, step))
    for rel in layouts.forbidden_leftovers(cfg, step):
        full = "%s/%s" % (base, rel) if base else rel
        if sink.exists(full):
            problems.append("leftover " + rel)
    return problems


class Trainer(threading.Thread):
    def __init__(self, pod, task, log_path, state_dir, s3, cluster_size):
        super().__init__(name="trainer-%s" % pod["metadata"]["name"], daemon=True)
        self.pod = pod
        self.task = task
        self.node = pod["status"]["node"]
        self.local_name = pod["metadata"]["labels"][LOCAL_NAME_LABEL]
        self.out = podlog.for_path(log_path)
        self.state_dir = state_dir
        self.s3 = s3
        self.cluster_size = cluster_size
        self._killed = threading.Event()
        self.step = 0
        self.held = 0  # the step the loaded checkpoint's content holds (0: trained from scratch)

    # ------------------------------------------------------------ control
    def kill(self):
        """SIGKILL: no message, no cleanup; a save in progress stays partial."""
        self._killed.set()

    def _check(self):
        if self._killed.is_set():
            raise Killed()

    def _sleep(self, seconds):
        if self._killed.wait(max(0.0, seconds)):
            raise Killed()

    def say(self, text):
        self._check()
        self.out.line(text)

    def run(self):
        self.out.start_container(self.pod["metadata"]["name"])  # a (re)started container: kubelet log range
        try:
            self._run()
            log.info("%s: trainer ended at step %d", self.local_name, self.step)
        except Killed:
            log.info("%s: trainer killed at step %d", self.local_name, self.step)
        except Exception as exc:  # a simulator bug must not take the process down
            log.exception("%s: trainer crashed", self.local_name)
            self.out.line("Traceback (most recent call last):")
            self.out.line("%s: %s" % (type(exc).__name__, exc))

    # ------------------------------------------------------------ the run script
    def _run(self):
        spec = self.task.get("spec") or {}
        env = container_env(self.task)
        ann = self.task["metadata"].get("annotations") or {}
        total = int(ann.get("rlark.io/ray-total-nodes", "1") or 1)
        script = spec.get("runScript") or ""
        cfg = TrainerConfig(parse_overrides(script, env), env)
        self.say(
            "Starting Ray head node on %s (RLINF_NODE_RANK=%s)"
            % (self.node, ann.get("rlark.io/ray-node-rank-start", "0"))
        )
        self._wait_cluster(total, cfg.ray_check_seconds)
        if not script.strip():
            self.say("No run script provided, keeping cluster alive.")
            return
        self._long_line(cfg, 0)  # RLinf dumps its config at start-up: a long line before the run starts
        self.say("Executing run script...")
        start = self._resume(cfg)
        if start is None:
            return  # the load failed: the run never advances
        began = time.monotonic()
        for step in range(start + 1, cfg.max_steps + 1):
            step_began = time.monotonic()
            self._sleep(cfg.step_seconds)
            self.step = step
            if cfg.save_interval > 0 and (step % cfg.save_interval == 0 or step == cfg.max_steps):
                self._save(cfg, step)
            self._extra_lines(cfg, step)
            self._long_line(cfg, step)
            if cfg.metrics_table:
                values = metrics.values(cfg.seed, self.held + step - start)
                values["time/step"] = round(time.monotonic() - step_began, 3)
                self._check()
                self.out.lines(metrics.table(step, cfg.max_steps, time.monotonic() - began, step - start, values))
            self.say("Global Step: %d/%d" % (step, cfg.max_steps))
            if start == 0 and step == cfg.stall_after:
                log.info("%s: SIM_STALL_AFTER_STEP=%d: the run hangs", self.local_name, step)
                self._killed.wait()  # a stuck run: nothing more is logged until it is stopped
                raise Killed()

    def _extra_lines(self, cfg, step, batch=10000):
        """SIM_LOG_EXTRA_LINES: long logs for tests and benches, written in batches (memory stays small)."""
        total = cfg.extra_lines
        for first in range(1, total + 1, batch):
            self._check()
            lines = []
            for i in range(first, min(total, first + batch - 1) + 1):
                head = "[sim-log] step %d line %d/%d " % (step, i, total)
                lines.append(head + "x" * max(0, cfg.line_bytes - len(head)))
            self.out.lines(lines)

    def _long_line(self, cfg, step):
        """SIM_LONG_LINE_BYTES: one line of exactly that many bytes (newline excluded) every SIM_LONG_LINE_EVERY
        steps, like a trainer dumping its config or a metrics dict: key=value metrics and paths, then a dotted
        name a quarter of the line long and one run of letters for the rest (the long runs a redaction scans),
        ending in ``|end step <s>`` so a reader can tell a whole line from a cut one. Nothing in it looks like
        a secret."""
        size = cfg.long_line_bytes
        if not size or step % cfg.long_line_every:
            return
        head = "[sim-long] step %d bytes %d rollout/reward_mean=0.%04d actor.grad_norm: 1.%03d " % (
            step,
            size,
            step % 10000,
            step % 1000,
        )
        head += "data.path=/data/rlinf/shard-%05d.parquet config." % (step % 100000)
        tail = " |end step %d" % step
        fill = max(0, size - len(head) - len(tail))  # a size below ~130 bytes gives just the head and the end
        dotted = ("ab." * (fill // 12 + 1))[: fill // 4]
        self.out.lines([head + dotted + " " + "x" * max(0, fill - len(dotted) - 1) + tail])

    def _wait_cluster(self, total, timeout):
        deadline = time.time() + timeout
        while True:
            alive = self.cluster_size()
            if alive >= total:
                self.say("Cluster is ready: %d/%d nodes alive." % (alive, total))
                return
            if time.time() >= deadline:
                self.say("Error: Cluster did not become ready within 15 minutes (%d/%d nodes alive)." % (alive, total))
                self.say("Warning: Ray cluster check failed, proceeding anyway.")
                return
            self._sleep(0.5)

    def _sink(self, container_path):
        return resolve_path(self.task, container_path, self.node, self.state_dir, self.s3, self.local_name)

    # ------------------------------------------------------------ resume
    def _resume(self, cfg):
        """Start step (N of the loaded checkpoint, 0 from scratch) or None when the load failed."""
        resume = cfg.resume_dir
        if resume is not None and cfg.fault == "ignore-resume-dir":
            log.info("%s: SIM_TRAINER_FAULT=ignore-resume-dir: %s is not read", self.local_name, resume)
            resume = None
        if resume is None:
            if cfg.reasoning:
                self.say("Training from scratch")
            return 0
        if resume == "auto" and cfg.runner in ("reasoning", "agent"):
            resume = self._auto_resume(cfg)
            if resume is None:
                return 0
        tail = resume.split("global_step_")[-1]
        try:
            step = int(tail)
        except ValueError:
            self.say("Traceback (most recent call last):")
            self.say('  File "rlinf/runners/runner.py", line 1, in init_workers')
            self.say("ValueError: invalid literal for int() with base 10: '%s'" % tail)
            return None
        if cfg.runner not in ("reasoning", "agent", "coding", "sft"):
            self.say("Resuming training from checkpoint directory %s." % resume)
        if cfg.reasoning:
            self.say("Load from checkpoint folder: %s" % resume)
        sink, base = self._sink(resume)
        problems = checkpoint_problems(cfg, sink, base, step)
        if problems:
            log.info("%s: resume from %s refused: %s", self.local_name, resume, problems)
            self._load_failure(cfg, resume, sink, base)
            return None
        if cfg.megatron:
            parts = ["actor"] + (["critic"] if cfg.critic and cfg.runner in ("reasoning", "agent") else [])
            for part in parts:
                self.say(" loading checkpoint from %s/%s at iteration %d" % (resume, part, step))
                self.say(
                    "  successfully loaded checkpoint from %s/%s [ t 1/%d, p 1/%d ] at iteration %d"
                    % (resume, part, cfg.tp, cfg.pp, step)
                )
        if cfg.reasoning:
            self.say("Setting global step to %d" % step)
        self.held = self._held_step(cfg, sink, base, resume, step)
        return step

    def _held_step(self, cfg, sink, base, resume, step):
        """The step the loaded content holds: ``step``, or (SIM_TRAINER_FAULT=load-other-step) another one's."""
        if cfg.fault == "load-other-step":
            parent = resume.rsplit("/", 1)[0]
            psink, pbase = self._sink(parent)
            others = sorted(
                int(n.split("global_step_")[-1])
                for n in psink.list_dirs(pbase)
                if n.startswith("global_step_") and n.split("global_step_")[-1].isdigit()
            )
            others = [
                k
                for k in others
                if k != step and not checkpoint_problems(cfg, *self._sink("%s/global_step_%d" % (parent, k)), k)
            ]
            if not others:
                log.info("%s: SIM_TRAINER_FAULT=load-other-step: no other step, loads nothing", self.local_name)
                return 0
            lower = [k for k in others if k < step]
            other = lower[-1] if lower else others[0]
            log.info("%s: SIM_TRAINER_FAULT=load-other-step: loads step %d, not %d", self.local_name, other, step)
            sink, base = self._sink("%s/global_step_%d" % (parent, other))
            step = other
        first = layouts.required_entries(cfg, step)[0]
        held = metrics.held_step(sink.read("%s/%s" % (base, first) if base else first))
        return step if held is None else int(held)

    def _auto_resume(self, cfg):
        root = cfg.checkpoints_root()
        sink, base = self._sink(root)
        steps = []
        for name in sink.list_dirs(base):
            if name.startswith("global_step_"):
                steps.append(int(name.split("global_step_")[-1]))  # a *_bak name crashes, as in RLinf
        if not steps:
            self.say("No checkpoints found, starting from scratch")
            return None
        chosen = "%s/global_step_%d" % (root, max(steps))
        self.say("Auto resume from checkpoint: %s" % chosen)
        return chosen

    def _load_failure(self, cfg, resume, sink, base):
        if cfg.megatron:
            self.say("WARNING: could not find the metadata file %s/actor/latest_checkpointed_iteration.txt " % resume)
            self.say("    will not load any checkpoints and will start from random")
            self.say(">> '--exit-on-missing-checkpoint' set ... exiting. <<")
            return
        dcp = "%s/actor/dcp_checkpoint" % resume
        where = (
            dcp
            if sink.is_dir("%s/actor/dcp_checkpoint" % base if base else "actor/dcp_checkpoint")
            else resume + "/actor"
        )
        self.say("Traceback (most recent call last):")
        self.say('  File "rlinf/hybrid_engines/fsdp/strategy/checkpoint.py", line 1, in load_checkpoint')
        self.say("FileNotFoundError: Could not find a valid DCP checkpoint under '%s'" % where)

    # ------------------------------------------------------------ save
    def _save(self, cfg, step):
        ckpt_dir = cfg.checkpoint_dir(step)
        fmt = "torch_dist" if cfg.backend == "megatron_torch_dist" else "torch"
        if cfg.megatron:
            pass  # Megatron announces each model part (actor, critic) as it starts writing it
        elif cfg.runner in ("embodied", "offline", "sac", "dagger", "iql"):
            self.say("Saving checkpoint at step %d." % step)
        sink, base = self._sink(ckpt_dir)
        plan = layouts.save_plan(cfg, step)
        slots = len(plan) - 1 + sum(1 for op in plan if op[0] == "write" and layouts.splits_in_two(op[2]))
        pause = cfg.save_seconds / max(1, slots)

        def full(rel):
            return "%s/%s" % (base, rel) if base else rel

        announced = set()
        for index, op in enumerate(plan):
            if index:
                self._sleep(pause)
            self._check()
            if op[0] == "rename":
                sink.rename(full(op[1]), full(op[2]))
                continue
            _, rel, kind = op
            part = rel.split("/", 1)[0]
            if cfg.megatron and part in ("actor", "critic") and part not in announced:
                announced.add(part)
                self.say("saving checkpoint at iteration %7d to %s/%s in %s format" % (step, ckpt_dir, part, fmt))
            data = layouts.payload(kind, rel, step)
            if layouts.splits_in_two(kind):
                half = len(data) // 2
                sink.write(full(rel), data[:half])
                self._sleep(pause)
                sink.append(full(rel), data[half:])
            else:
                sink.write(full(rel), data)
            if rel.endswith("latest_checkpointed_iteration.txt"):
                self.say(
                    "  successfully saved checkpoint from iteration %7d to %s/%s [ t 1/%d, p 1/%d ]"
                    % (step, ckpt_dir, part, cfg.tp, cfg.pp)
                )
        log.info("%s: saved %s to %s", self.local_name, ckpt_dir, sink.describe())


def pod_log_path(state_dir, task, local_name):
    """The `main` container log of a pod: <state>/logs/<job>/<local pod name>.log."""
    job = (task["metadata"].get("labels") or {}).get("rlinf.io/job") or task["metadata"]["name"]
    return os.path.join(state_dir, "logs", job, local_name + ".log")


class TrainerManager:
    """One trainer per Running head Pod CR (ordinal 0 of the head Task); kills them when the pod goes."""

    def __init__(self, tasks, pods, state_dir, s3):
        self.tasks = tasks
        self.pods = pods
        self.state_dir = state_dir
        self.s3 = s3
        self.trainers = {}
        self.worker_logged = set()

    def log_path(self, task, local_name):
        return pod_log_path(self.state_dir, task, local_name)

    def cluster_size_fn(self, task):
        job = (task["metadata"].get("labels") or {}).get("rlinf.io/job")

        def count():
            names = {
                (t["metadata"]["namespace"], t["metadata"]["name"])
                for t in self.tasks.snapshot()
                if job and (t["metadata"].get("labels") or {}).get("rlinf.io/job") == job
            } or {(task["metadata"]["namespace"], task["metadata"]["name"])}
            return sum(
                1
                for p in self.pods.snapshot()
                if (p["metadata"].get("namespace"), (p["metadata"].get("labels") or {}).get(TASK_NAME_LABEL)) in names
                and (p.get("status") or {}).get("phase") == "Running"
            )

        return count

    def reconcile_all(self):
        live = set()
        for pod in self.pods.snapshot():
            meta = pod["metadata"]
            status = pod.get("status") or {}
            if status.get("phase") != "Running" or not status.get("node"):
                continue
            task = self.tasks.get(meta.get("namespace"), (meta.get("labels") or {}).get(TASK_NAME_LABEL))
            if task is None or task["metadata"].get("deletionTimestamp"):
                continue
            if workload_of(task) is None or effective_stopped(task) or ANN_STOPPING in (meta.get("annotations") or {}):
                continue  # replicas 0: the trainer is killed at once, before the Pod CR goes
            uid = meta["name"]
            live.add(uid)
            local = (meta.get("labels") or {}).get(LOCAL_NAME_LABEL, "")
            if is_head(task) and ordinal_of(pod) == 0:
                if uid not in self.trainers:
                    trainer = Trainer(
                        pod, task, self.log_path(task, local), self.state_dir, self.s3, self.cluster_size_fn(task)
                    )
                    self.trainers[uid] = trainer
                    log.info("%s: trainer started on %s", local, status["node"])
                    trainer.start()
            elif uid not in self.worker_logged:
                self.worker_logged.add(uid)
                head = (task["metadata"].get("annotations") or {}).get("rlark.io/ray-head-task-name", "")
                out = podlog.for_path(self.log_path(task, local))
                out.start_container(uid)
                out.line("Waiting for Ray head at %s-ray-head:6379..." % head)
                out.line("Ray worker node started on %s, connected to %s-ray-head:6379" % (status["node"], head))
        for uid in list(self.trainers):
            if uid not in live:
                self.trainers.pop(uid).kill()
        self.worker_logged &= live

    def stop_all(self):
        for trainer in self.trainers.values():
            trainer.kill()
