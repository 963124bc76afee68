# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pytest plugin loaded by hack/mutation.py's test command only.

cosmic-ray's ExceptionReplacer writes ``except CosmicRayTestingException`` into the mutant, a name the
module does not import: without it in builtins any exception reaching that clause becomes a NameError,
and the mutant is "killed" by the tool's own artefact instead of by a test.
"""

import builtins
import os

from cosmic_ray.exceptions import CosmicRayTestingException

builtins.CosmicRayTestingException = CosmicRayTestingException

# A mutant that swaps the two branches after os.fork() (dcp_prefetch) sends the test process itself into the
# child's code, which ends with os._exit(0): pytest would stop there with status 0, its remaining tests unrun, and
# the mutant would "survive". Forked children exit as they ask; the test process never leaves through os._exit.
# The child, in the parent's code, holds pid 0 as its reader's pid: os.kill(0, ...) would signal the whole process
# group, cosmic-ray and make included. No test signals a group, so a pid <= 0 is refused.
_MAIN = os.getpid()
_real_exit = os._exit
_real_kill = os.kill


def _exit(status):
    _real_exit(status if os.getpid() != _MAIN else 3)


def _kill(pid, sig):
    if pid <= 0:
        raise PermissionError("mutation_builtins: os.kill(%d) would signal a process group" % pid)
    _real_kill(pid, sig)


os._exit = _exit
os.kill = _kill
