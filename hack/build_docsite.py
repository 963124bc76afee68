"""Build the collection's HTML docsite (`make docs`): antsibull-docs + Sphinx, no warning allowed.

    python hack/build_docsite.py [--dest .build/docsite]

1. ``antsibull-docs collection --use-current`` writes the RST of every module, filter, lookup and role
   (entry points, from meta/argument_specs.yml) of the collection found on ANSIBLE_COLLECTIONS_PATH.
2. The EDA event source (extensions/eda, which antsibull-docs does not document) gets its page from its
   DOCUMENTATION, its markup rendered with antsibull-docs-parser, and an "Event Sources" index section.
3. ``sphinx-build -W --keep-going`` (nitpicky) with hack/docsite/conf.py; the few docs.ansible.com pages
   our docs link to resolve through a local intersphinx inventory (ANSIBLE_DEVEL_LABELS).
Any line antsibull-docs or Sphinx prints with WARNING or ERROR fails the build. The site is in
<dest>/build/html (index.html).
"""

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import zlib

import yaml
from antsibull_docs_parser import dom
from antsibull_docs_parser.parser import Context, parse
from antsibull_docs_parser.rst import to_rst_plain

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(os.path.abspath(sys.executable))
TEMPLATE = os.path.join(ROOT, "hack", "docsite")
EVENT_SOURCES = os.path.join(ROOT, "extensions", "eda", "plugins", "event_source")
COLLECTION = "rlark.ops"
# Labels of docs.ansible.com (devel) that the generated pages reference: label -> (page, title).
ANSIBLE_DEVEL_LABELS = {
    "common_return_values": ("reference_appendices/common_return_values.html", "Return Values"),
    "action_plugins": ("plugins/action.html", "Action plugins"),
    "ansible_configuration_settings": ("reference_appendices/config.html", "Ansible Configuration Settings"),
    "ansible_collections.ansible.builtin.raw_module": (
        "collections/ansible/builtin/raw_module.html",
        "ansible.builtin.raw module",
    ),
    "ansible_collections.kubernetes.core.k8s_info_module": (
        "collections/kubernetes/core/k8s_info_module.html",
        "kubernetes.core.k8s_info module",
    ),
}
OWN_PLUGIN = re.compile(r" \(of event_source plugin :ref:`[^`]*`\)")
PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Traceback", re.IGNORECASE)


def write_inventory(path):
    """A Sphinx (intersphinx) inventory v2 holding ANSIBLE_DEVEL_LABELS."""
    lines = "".join(
        "%s std:label -1 %s %s\n" % (label, page, title)
        for label, (page, title) in sorted(ANSIBLE_DEVEL_LABELS.items())
    )
    header = "# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n"
    header += "# The remainder of this file is compressed using zlib.\n"
    with open(path, "wb") as fh:
        fh.write(header.encode("utf-8") + zlib.compress(lines.encode("utf-8")))


def rst(text, plugin):
    """Ansible markup (C(), O(), M(), ...) of one description as plain RST; bad markup raises."""
    paragraphs = parse(text if isinstance(text, list) else [text], Context(current_plugin=plugin), errors="exception")
    text = to_rst_plain(paragraphs, current_plugin=plugin)
    return OWN_PLUGIN.sub("", text)  # O(x) of this very plugin: no "(of event_source plugin ...)" after each


def indent(text, by="   "):
    return "\n".join(by + line if line.strip() else "" for line in text.splitlines())


def event_source_page(path):
    """(page name, RST) of one event source from its DOCUMENTATION and EXAMPLES."""
    name = os.path.basename(path)[: -len(".py")]
    plugin = dom.PluginIdentifier(fqcn="%s.%s" % (COLLECTION, name), type="event_source")
    values = {}
    with open(path) as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id in ("DOCUMENTATION", "EXAMPLES"):
            values[node.targets[0].id] = node.value.value
    doc = yaml.safe_load(values["DOCUMENTATION"])
    title = "%s.%s event source -- %s" % (COLLECTION, name, doc["short_description"])
    out = [".. _ansible_collections.%s.%s_event_source:" % (COLLECTION, name), "", title, "=" * len(title), ""]
    out += ["Event-Driven Ansible source plugin, in ``extensions/eda/plugins/event_source/%s.py``." % name, ""]
    out += ["Synopsis", "--------", ""]
    out += ["- %s" % rst(par, plugin).replace("\n", "\n  ") for par in doc["description"]]
    out += ["", "Parameters", "----------", ""]
    for option, spec in doc["options"].items():
        facts = [spec.get("type", "str")]
        if "default" in spec:
            facts.append("default: ``%s``" % (spec["default"],))
        out += ["``%s`` (%s)" % (option, ", ".join(facts)), indent(rst(spec["description"], plugin)), ""]
    out += ["Examples", "--------", "", ".. code-block:: yaml+jinja", "", indent(values["EXAMPLES"].strip("\n")), ""]
    return "%s_event_source" % name, "\n".join(out)


def add_event_sources(rst_dir):
    pages = [event_source_page(os.path.join(EVENT_SOURCES, f)) for f in sorted(os.listdir(EVENT_SOURCES))]
    names = [page for page, _text in pages]
    for page, text in pages:
        with open(os.path.join(rst_dir, page + ".rst"), "w") as fh:
            fh.write(text)
    section = ["", "", "Event Sources (Event-Driven Ansible)", "------------------------------------", ""]
    section += ["* :ref:`%s <ansible_collections.%s.%s>`" % (p[: -len("_event_source")], COLLECTION, p) for p in names]
    section += ["", ".. toctree::", "    :maxdepth: 1", "    :hidden:", ""] + ["    " + p for p in names] + [""]
    with open(os.path.join(rst_dir, "index.rst"), "a") as fh:
        fh.write("\n".join(section))
    return names


def run(cmd, cwd, env, what):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    text = proc.stdout + proc.stderr
    problems = [line for line in text.splitlines() if PROBLEM.search(line)]
    if proc.returncode != 0 or problems:
        sys.stderr.write(text)
        raise SystemExit("docs: %s failed (exit %d, %d warning/error line(s))" % (what, proc.returncode, len(problems)))
    return text


def build(dest):
    shutil.rmtree(dest, ignore_errors=True)
    rst_dir = os.path.join(dest, "rst")
    os.makedirs(rst_dir, mode=0o755)
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(ROOT, ".build", "collections"))
    antsibull = [os.path.join(BIN, "antsibull-docs"), "--config-file", os.path.join(TEMPLATE, "antsibull-docs.cfg")]
    antsibull += ["collection", "--cleanup", "everything", "--fail-on-error", "--use-current", "--squash-hierarchy"]
    run(antsibull + ["--dest-dir", rst_dir, COLLECTION], dest, env, "antsibull-docs collection")
    add_event_sources(rst_dir)
    write_inventory(os.path.join(dest, "ansible_devel.inv"))
    sphinx = [os.path.join(BIN, "sphinx-build"), "-M", "html", rst_dir, os.path.join(dest, "build")]
    run(sphinx + ["-c", TEMPLATE, "-W", "--keep-going", "-q"], dest, env, "sphinx-build")
    return os.path.join(dest, "build", "html")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", default=os.path.join(ROOT, ".build", "docsite"))
    args = parser.parse_args(argv)
    html = build(os.path.abspath(args.dest))
    print("docs: %s/index.html" % os.path.relpath(html, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
