# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a listing knows about one ``global_step_*`` directory, gathered in one pass.

Every file is counted (files, bytes, newest mtime); only the few whose names the layout rules
look at are kept with their size and mtime, so memory stays proportional to the rules, not to
the number of trajectory files or shards of older steps.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import INTERESTING_SUFFIXES, ITER_DIR

# Replay-buffer rank directories hold many trajectory files; the rules need only these.
REPLAY_KEPT = (".json", ".tmp")


def keeps_all(rel_dir):
    """Whether every interesting name under this directory is kept (not a replay-buffer rank dir)."""
    return "replay_buffer/rank_" not in rel_dir


class StepFacts:
    __slots__ = (
        "bytes",
        "dirs",
        "entries",
        "errors",
        "files",
        "index",
        "leftovers",
        "name",
        "newest",
        "prefetched",
        "sizes",
    )

    def __init__(self, name):
        self.name = name
        self.files = 0
        self.bytes = 0
        self.newest = None
        self.entries = {}  # relpath -> mtime, interesting files only
        self.sizes = {}  # parent relpath -> {shard name: size} of DCP shards (checked against their .metadata)
        self.dirs = set()  # relpaths of directories (local) or key prefixes (S3)
        self.leftovers = []  # relpaths of *.tmp files (interrupted atomic writes)
        self.errors = []  # unreadable subdirectories / files
        self.index = None  # parent relpath -> child names, when the listing built it on the way
        self.prefetched = {}  # DCP .metadata relpath -> dcp_prefetch.Claim taken by a local walk

    def add_file(self, rel, size, mtime):
        """One file (local) or object (S3), ``rel`` relative to the step directory."""
        self.files += 1
        self.bytes += size
        if self.newest is None or mtime > self.newest:
            self.newest = mtime
        if rel.endswith(INTERESTING_SUFFIXES) and (keeps_all(rel) or rel.endswith(REPLAY_KEPT)):
            self.keep(rel, size, mtime)

    def keep(self, rel, size, mtime):
        self.entries[rel] = mtime
        if rel.endswith(".distcp"):
            parent, _sep, name = rel.rpartition("/")
            self.sizes.setdefault(parent, {})[name] = size
        if rel.endswith(".tmp"):
            self.leftovers.append(rel)

    def children(self):
        """parent relpath -> set of child names (files and directories), from what was kept."""
        if self.index is not None:
            return self.index
        index = {}
        for rel in list(self.entries) + list(self.dirs):
            parent, _sep, name = rel.rpartition("/")
            index.setdefault(parent, set()).add(name)
        return index


# Megatron iteration directories may hold thousands of shards; telling torch from torch_dist needs only these.
ITER_MARKERS = (".metadata", "common.pt", "metadata.json")


def shallow_facts(source, name):
    """What :func:`gate.identify` reads of a sibling step, from a few directory listings instead of a walk.

    ``source.list_dir(step, rel)`` -> (file names, directory names); ``source.iter_dir_names(step, rel)``
    -> the names of an ``iter_*`` directory that decide its format (markers, one shard or mp_rank).
    """
    facts = StepFacts(name)
    facts.index = index = {}

    def look(rel, names=None):
        if names is None:
            files, dirs = source.list_dir(name, rel)
        else:
            files, dirs = names
        prefix = rel + "/" if rel else ""
        index[rel] = set(files) | set(dirs)
        facts.dirs.update(prefix + d for d in dirs)
        for f in files:
            facts.entries[prefix + f] = 0.0
        return dirs

    top = look("")
    for comp in ("actor", "critic"):
        if comp not in top:
            continue
        inner = look(comp)
        for it in inner:
            if ITER_DIR.match(it):
                look(comp + "/" + it, source.iter_dir_names(name, comp + "/" + it))
        if comp == "actor" and "sac_components" in inner:
            look("actor/sac_components")
    facts.files = len(facts.entries)
    return facts
