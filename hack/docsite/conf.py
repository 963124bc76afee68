# Sphinx configuration of the collection's docsite (`make docs`, hack/build_docsite.py), from
# `antsibull-docs sphinx-init` with one change: intersphinx reads a local inventory of the few
# docs.ansible.com pages our docs link to (the build machines have no internet; the links still point there).
project = "rlark.ops"
copyright = "rlark.ops contributors"
title = "rlark.ops collection documentation"
html_short_title = "rlark.ops"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.intersphinx", "sphinx_antsibull_ext"]
pygments_style = "ansible"
highlight_language = "YAML+Jinja"
html_theme = "sphinx_ansible_theme"
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

# ansible_devel.inv is written by hack/build_docsite.py from ANSIBLE_DEVEL_LABELS.
intersphinx_mapping = {
    "ansible_devel": ("https://docs.ansible.com/projects/ansible/devel/", "../ansible_devel.inv"),
}
default_role = "any"
nitpicky = True
