# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark_jobs event source file: its documented arguments are the accepted ones, bad ones are named."""

import asyncio
import importlib.util
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PATH = os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "rlark_jobs.py")


@pytest.fixture(scope="module")
def source():
    spec = importlib.util.spec_from_file_location("rlark_jobs_under_test", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_documented_options_are_exactly_the_accepted_ones(source):
    documented = set(yaml.safe_load(source.DOCUMENTATION)["options"])
    accepted = set(source.OPTIONS) | set(source.AUTH_OPTIONS)
    assert set(source.OPTIONS) <= documented <= accepted
    assert yaml.safe_load(source.EXAMPLES)[0]["sources"][0]["rlark.ops.rlark_jobs"]


def test_defaults_and_env_fallback(source, monkeypatch):
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/tmp/kc")
    options, auth = source.parse_args({"label_selector": "team=rl"})
    assert auth == {"kubeconfig": "/tmp/kc"}
    assert options["checkpoints"] is False and options["checkpoint_interval"] == 60 and options["watch_seconds"] == 290


@pytest.mark.parametrize(
    "args, message",
    [
        ({"label_selectors": "team=rl"}, "unknown argument(s) label_selectors"),
        ({"checkpoints": "yes"}, "checkpoints must be a bool"),
        ({"watch_seconds": True}, "watch_seconds must be a int"),
        ({"checkpoint_interval": 0}, "must be positive"),
    ],
)
def test_bad_arguments_are_named_before_anything_runs(source, args, message):
    with pytest.raises(ValueError) as err:
        asyncio.run(source.main(asyncio.Queue(), args))
    assert message in str(err.value)
