# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import the collection's filter and lookup plugins once, in the controller process.

Ansible forks one worker per host per task. In a worker, the first ``rlark.ops.*`` filter makes
the filter loader import every filter file of the collection (it scans them all for the name), with
the module_utils behind them, compiled from source each time (the collection loader keeps no
bytecode): about 0.1 s of CPU per worker. guarded_stop.yml gives every Job its own in-memory host,
so 20 Jobs paid that ~200 times. Before forking a task's workers, the strategies (linear, free) load
the task's action plugin class in the controller process; the collection's action plugins call
``preload()`` when imported, so the controller imports the filters and lookups at its first rlark
task and every later worker inherits them (``sys.modules``) instead of compiling them again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import pkgutil

# The lookup's documentation extends a doc fragment, which the lookup loader imports with it.
PACKAGES = (
    "ansible_collections.rlark.ops.plugins.filter",
    "ansible_collections.rlark.ops.plugins.lookup",
    "ansible_collections.rlark.ops.plugins.doc_fragments",
)


def preload():
    """Import every filter, lookup and doc fragment file of the collection (cheap once they are imported)."""
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__, name + "."):
            try:
                importlib.import_module(info.name)
            except ImportError:
                continue  # the filter loader reports it where that plugin is used, as without the preload
