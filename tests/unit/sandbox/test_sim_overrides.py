"""Hydra override parsing and trainer configuration of rlark-sim."""

from rlark_sim.overrides import TrainerConfig, container_env, parse_overrides


def test_plus_prefixes_and_last_wins():
    script = "python a.py runner.save_interval=10 +runner.resume_dir=/x/global_step_10 ++runner.save_interval=20"
    got = parse_overrides(script)
    assert got == {"runner.save_interval": "20", "runner.resume_dir": "/x/global_step_10"}


def test_quotes_comments_continuations_and_variables():
    script = (
        "export CKPT=/data/ckpt\n"
        "# runner.max_steps=999 is a comment\n"
        'python main.py \\\n  runner.output_dir="$CKPT/out" runner.experiment_name=${EXP} \\\n'
        "  'runner.logger.log_path=${runner.output_dir}/logs'\n"
    )
    got = parse_overrides(script, env={"EXP": "e1"})
    assert got["runner.output_dir"] == "/data/ckpt/out"
    assert got["runner.experiment_name"] == "e1"
    assert got["runner.logger.log_path"] == "/data/ckpt/out/logs"
    assert "runner.max_steps" not in got


def test_unbalanced_quotes_do_not_crash():
    assert parse_overrides("python a.py runner.max_steps=5 'oops")["runner.max_steps"] == "5"


def test_null_resume_dir_and_defaults():
    cfg = TrainerConfig(parse_overrides("python a.py runner.resume_dir=null"), {})
    assert cfg.resume_dir is None
    assert (cfg.runner, cfg.backend, cfg.world_size, cfg.full_weights) == ("embodied", "fsdp", 2, True)
    assert cfg.save_interval == 40


def test_checkpoint_dir_per_runner_family():
    overrides = parse_overrides(
        "runner.output_dir=/o runner.experiment_name=r runner.logger.log_path=/l runner.logger.experiment_name=e"
    )
    assert TrainerConfig(overrides, {}).checkpoint_dir(40) == "/l/e/checkpoints/global_step_40"
    reasoning = TrainerConfig(overrides, {"SIM_RLINF_RUNNER": "reasoning"})
    assert reasoning.checkpoint_dir(50) == "/o/r/checkpoints/global_step_50"


def test_container_env_reads_plain_values_of_main():
    task = {
        "spec": {
            "kubernetes": {
                "workload": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "side", "env": [{"name": "A", "value": "no"}]},
                                {"name": "main", "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {}}]},
                            ]
                        }
                    }
                }
            }
        }
    }
    assert container_env(task) == {"A": "1", "B": ""}


def test_a_resume_copy_loads_the_old_directory_and_writes_its_own():
    # What resume.yml passes: the original's overrides, then its own experiment name and the resume dir.
    script = (
        "python t.py runner.logger.log_path=/data/logs runner.logger.experiment_name=demo "
        "'++runner.logger.experiment_name=demo-r9' ++runner.resume_dir=/data/logs/demo/checkpoints/global_step_9"
    )
    cfg = TrainerConfig(parse_overrides(script), {})
    assert cfg.resume_dir == "/data/logs/demo/checkpoints/global_step_9"
    assert cfg.checkpoint_dir(12) == "/data/logs/demo-r9/checkpoints/global_step_12"
    reasoning = TrainerConfig(
        parse_overrides("python t.py runner.output_dir=/o runner.experiment_name=e ++runner.experiment_name=e-r5"),
        {"SIM_RLINF_RUNNER": "reasoning"},
    )
    assert reasoning.checkpoint_dir(10) == "/o/e-r5/checkpoints/global_step_10"
