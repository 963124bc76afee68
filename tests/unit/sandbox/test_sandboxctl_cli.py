"""sandboxctl's command line: --sim-args with a flag-like value, RLARK_CONTROLLER_MANAGER set to a missing path."""

import os
import subprocess
import sys

import sandboxctl
from sandboxlib import crdsets

SANDBOXCTL = sandboxctl.__file__


def test_a_single_flag_like_sim_args_value_is_taken_as_the_value():
    assert sandboxctl.join_sim_args(["up", "--sim-args", "--no-controller"]) == ["up", "--sim-args=--no-controller"]
    assert sandboxctl.join_sim_args(["up", "--sim-args", "--no-gc --grace-seconds 2"]) == [
        "up",
        "--sim-args=--no-gc --grace-seconds 2",
    ]
    assert sandboxctl.join_sim_args(["up", "--crds", "project"]) == ["up", "--crds", "project"]


def test_sim_argv_turns_the_sims_controller_off_when_rlarks_runs():
    class Args:
        sim_args, controller_manager = "--no-gc", "/opt/rlark/controller-manager"

    assert sandboxctl.sim_argv(Args) == ["--no-gc", "--no-controller"]
    Args.controller_manager = None
    assert sandboxctl.sim_argv(Args) == ["--no-gc"]


def test_missing_controller_manager_binary_fails_with_one_sentence(tmp_path):
    env = dict(os.environ, RLARK_CONTROLLER_MANAGER=str(tmp_path / "no-such-binary"))
    proc = subprocess.run(
        [sys.executable, SANDBOXCTL, "--dir", str(tmp_path / "state"), "up"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "RLARK_CONTROLLER_MANAGER=" in lines[0] and lines[0].endswith("."), proc.stderr
    assert not (tmp_path / "state").exists()  # nothing was started or written


def test_rlarks_controller_manager_gets_the_upstream_crds_unless_asked_otherwise(capsys):
    assert crdsets.crds_with_controller_manager(None, "/opt/rlark/cm") == "upstream"
    assert crdsets.crds_with_controller_manager("upstream", "/opt/rlark/cm") == "upstream"
    assert crdsets.crds_with_controller_manager(None, None) is None  # later: the running set, or project
    assert capsys.readouterr().out == ""
    assert crdsets.crds_with_controller_manager("project", "/opt/rlark/cm") == "project"
    assert "DomainPeer" in capsys.readouterr().out
