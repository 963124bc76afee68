"""Read the trainer's inputs out of a head Task: Hydra overrides in runScript, env of the `main` container."""

import re
import shlex

RUNNER_KEYS = (
    "runner.resume_dir",
    "runner.save_interval",
    "runner.max_steps",
    "runner.output_dir",
    "runner.experiment_name",
    "runner.logger.log_path",
    "runner.logger.experiment_name",
)
_OVERRIDE = re.compile(r"^\+{0,2}(runner\.[A-Za-z0-9_.]+)=(.*)$", re.S)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_INTERP = re.compile(r"\$\{(runner\.[A-Za-z0-9_.]+)\}")


def _tokens(script):
    text = (script or "").replace("\\\n", " ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: fall back to a plain split
        return text.split()


def expand(value, variables):
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), value)


def parse_overrides(script, env=None):
    """Hydra `runner.*` overrides (with or without +/++); the last one wins, like Hydra.

    Shell variables assigned in the script (`X=..`, `export X=..`) and the container env are expanded;
    `${runner.x}` interpolations between overrides are resolved.
    """
    variables = dict(env or {})
    found = {}
    for token in _tokens(script):
        match = _OVERRIDE.match(token)
        if match:
            found[match.group(1)] = expand(match.group(2), variables)
            continue
        assign = _ASSIGN.match(token)
        if assign:
            variables[assign.group(1)] = expand(assign.group(2), variables)
    for _ in range(3):
        for key, value in list(found.items()):
            found[key] = _INTERP.sub(lambda m: found.get(m.group(1), m.group(0)), value)
    return found


def null_if_none(value):
    if value is None or value.strip() in ("", "null", "None", "~"):
        return None
    return value


def as_int(value, default):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return default


def as_bool(value, default):
    if value is None:
        return default
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def container_env(task, container_name="main"):
    """Plain `value` env entries of the named container of the Task's pod template."""
    template = ((((task.get("spec") or {}).get("kubernetes") or {}).get("workload") or {}).get("template")) or {}
    for container in (template.get("spec") or {}).get("containers") or []:
        if container.get("name") == container_name:
            return {e["name"]: e.get("value", "") for e in container.get("env") or [] if "name" in e}
    return {}


class TrainerConfig:
    """Everything the simulated RLinf run needs, with RLinf-like defaults."""

    def __init__(self, overrides, env):
        self.runner = (env.get("SIM_RLINF_RUNNER") or "embodied").strip().lower()
        self.backend = (env.get("SIM_RLINF_BACKEND") or "fsdp").strip().lower()
        self.world_size = max(1, as_int(env.get("SIM_RLINF_WORLD_SIZE"), 2))
        self.tp = max(1, as_int(env.get("SIM_RLINF_TP"), 1))
        self.pp = max(1, as_int(env.get("SIM_RLINF_PP"), 1))
        self.critic = as_bool(env.get("SIM_RLINF_CRITIC"), False)
        self.full_weights = as_bool(env.get("SIM_RLINF_FULL_WEIGHTS"), True)
        self.learn_alpha = as_bool(env.get("SIM_RLINF_LEARN_ALPHA"), True)
        self.sft_data = (env.get("SIM_RLINF_SFT_DATA") or "none").strip().lower()
        self.step_seconds = float(env.get("SIM_STEP_SECONDS") or 1)
        self.save_seconds = float(env.get("SIM_SAVE_SECONDS") or 2)
        self.ray_check_seconds = float(env.get("SIM_RAY_CHECK_SECONDS") or 10)
        self.extra_lines = max(0, as_int(env.get("SIM_LOG_EXTRA_LINES"), 0))
        self.line_bytes = max(0, as_int(env.get("SIM_LOG_LINE_BYTES"), 80))
        self.long_line_bytes = max(0, as_int(env.get("SIM_LONG_LINE_BYTES"), 0))
        self.long_line_every = max(1, as_int(env.get("SIM_LONG_LINE_EVERY"), 1))
        # Continuity: metrics are a function of (seed, trained steps); faults make a resume go wrong silently.
        self.seed = (env.get("SIM_TRAINER_SEED") or "1").strip()
        self.metrics_table = as_bool(env.get("SIM_METRICS_TABLE"), True)
        self.fault = (env.get("SIM_TRAINER_FAULT") or "").strip().lower()
        self.stall_after = max(0, as_int(env.get("SIM_STALL_AFTER_STEP"), 0))
        reasoning = self.runner in ("reasoning", "agent", "coding")
        self.resume_dir = null_if_none(overrides.get("runner.resume_dir"))
        self.save_interval = as_int(overrides.get("runner.save_interval"), 50 if reasoning else 40)
        self.max_steps = as_int(overrides.get("runner.max_steps"), 1000)
        self.output_dir = overrides.get("runner.output_dir") or "/workspace/results"
        self.experiment_name = overrides.get("runner.experiment_name") or "default"
        default_log = "%s/%s" % (self.output_dir, self.experiment_name) if reasoning else "/workspace/logs"
        self.log_path = overrides.get("runner.logger.log_path") or default_log
        self.logger_experiment = overrides.get("runner.logger.experiment_name") or self.experiment_name

    @property
    def reasoning(self):
        return self.runner in ("reasoning", "agent", "coding")

    @property
    def megatron(self):
        return self.backend.startswith("megatron")

    def checkpoints_root(self):
        if self.reasoning:
            return "%s/%s/checkpoints" % (self.output_dir.rstrip("/"), self.experiment_name)
        return "%s/%s/checkpoints" % (self.log_path.rstrip("/"), self.logger_experiment)

    def checkpoint_dir(self, step):
        return "%s/global_step_%d" % (self.checkpoints_root(), step)
