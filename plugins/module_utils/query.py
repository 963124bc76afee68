# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JMESPath selection and assertions over plain data (Job / Task / Pod CR objects, module results).

Users select Jobs for a guarded stop and state success conditions in the launch manifest as JMESPath
expressions; this is the one place that compiles and evaluates them, so an invalid expression is one
readable sentence instead of a jmespath traceback.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    import jmespath
    from jmespath import exceptions as jmespath_exceptions

    HAS_JMESPATH = True
except ImportError:  # pragma: no cover - reported by the caller
    jmespath = None
    jmespath_exceptions = None
    HAS_JMESPATH = False

from ansible_collections.rlark.ops.plugins.module_utils.manifest import to_plain as plain


class QueryError(ValueError):
    """An expression that does not compile or cannot be evaluated; ``str()`` names the expression."""


def _compile(expression):
    if not HAS_JMESPATH:
        raise QueryError("the Python package 'jmespath' is required for rlark.ops.query")
    if not isinstance(expression, str) or not expression.strip():
        raise QueryError("a JMESPath expression must be a non-empty string, got %r" % (expression,))
    try:
        return jmespath.compile(expression)
    except jmespath_exceptions.JMESPathError as exc:
        raise QueryError("invalid JMESPath expression %r: %s" % (expression, _one_line(exc))) from exc


def _one_line(exc):
    return " ".join(str(exc).split())


def query(data, expression):
    """Evaluate ``expression`` against ``data``; ``None`` when nothing matches."""
    compiled = _compile(expression)
    try:
        return compiled.search(plain(data))
    except jmespath_exceptions.JMESPathError as exc:
        raise QueryError("JMESPath expression %r failed: %s" % (expression, _one_line(exc))) from exc


def holds(data, expression):
    """Truth of an assertion expression by JMESPath's rules (empty list/dict/string, false, null = false)."""
    result = query(data, expression)
    return not (result is None or result is False or result == [] or result == {} or result == "")


__all__ = ["HAS_JMESPATH", "QueryError", "holds", "plain", "query"]
