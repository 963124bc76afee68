"""Offline stand-in for ansible-test's pip bootstrap script (get-pip.py).

ansible-test creates one virtualenv per sanity test and bootstraps pip into it by running a
get-pip script that it downloads from a host this machine cannot reach. This shim does the same
job from a pip wheel fetched from PyPI beforehand: ``make sanity`` places both side by side in
ansible-test's cache directory.
"""

import glob
import os
import runpy
import sys

# get-pip.py options that pip itself does not know.
GET_PIP_ONLY_OPTIONS = ("--no-setuptools", "--no-wheel")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    wheels = sorted(glob.glob(os.path.join(here, "pip-*.whl")))
    if not wheels:
        sys.exit("no pip wheel next to %s; run 'make sanity' to fetch it" % __file__)
    sys.path.insert(0, wheels[-1])
    args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY_OPTIONS]
    sys.argv = ["pip", "install", "--no-cache-dir"] + args
    runpy.run_module("pip", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
