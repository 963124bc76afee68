# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load and validate the two migration records: launch manifest and deployment profile.

Both are YAML or JSON documents checked against ``schemas/*.schema.json`` (JSON Schema 2020-12).
Every problem comes back as data (``{ok, errors, data}``) with the exact field path such as
``roles[1].image.digest``; malformed YAML, a missing file or wrong types never raise.
``jsonschema`` is imported lazily and compiled validators are cached: filters are imported on every
Ansible run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import json
import os

MANIFEST = "manifest"
PROFILE = "profile"
KINDS = {MANIFEST: "LaunchManifest", PROFILE: "DeploymentProfile"}
TITLES = {MANIFEST: "launch manifest", PROFILE: "deployment profile"}
# The playbook variable that passes each record (named in hints, since users set these, not module options).
VARIABLES = {MANIFEST: "rlark_launch_manifest", PROFILE: "rlark_deployment_profile"}
SCHEMA_FILES = {MANIFEST: "launch_manifest.schema.json", PROFILE: "deployment_profile.schema.json"}
SCHEMA_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas"))

_VALIDATORS = {}


class InputError(Exception):
    """A document that cannot be read or parsed; the message is meant for the operator."""


def to_plain(value):
    """Deep copy into plain dict/list/str/int/float/bool/None (drops Ansible tagging, tuples)."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else str.__str__(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if value is None:
        return None
    return str(value)


def field_path(parts, prefix=""):
    """``['roles', 1, 'image', 'digest']`` -> ``roles[1].image.digest`` (optionally prefixed)."""
    text = prefix
    for part in parts:
        if isinstance(part, int):
            text += "[%d]" % part
        else:
            text += ("." if text else "") + str(part)
    return text


def _yaml():
    import yaml

    return yaml


def parse_text(text, source="<text>"):
    """Parse YAML (a superset of JSON) into plain data; raise InputError with a readable message."""
    yaml = _yaml()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return to_plain(yaml.load(text, Loader=loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError("%s is not valid YAML%s: %s" % (source, where, problem)) from None


def load_document(source):
    """A dict from a path (YAML or JSON file) or from data; raise InputError when unusable."""
    if isinstance(source, dict):
        return to_plain(source)
    if isinstance(source, str):
        if _looks_like_path(source):
            path = os.path.expanduser(source)
            try:
                with open(path, "rb") as handle:
                    text = handle.read().decode("utf-8")
            except OSError as exc:
                raise InputError("cannot read %s: %s" % (source, exc.strerror or exc)) from None
            except UnicodeDecodeError:
                raise InputError("%s is not UTF-8 text" % source) from None
            data = parse_text(text, source)
        else:
            data = parse_text(source)
        if not isinstance(data, dict):
            raise InputError("%s must hold a mapping at the top level, not %s" % (source[:80], _type_name(data)))
        return data
    raise InputError("expected a mapping or a file path, got %s" % _type_name(source))


def _looks_like_path(text):
    """A one-line string naming a file (not inline YAML/JSON such as ``{...}`` or ``key: value``)."""
    text = text.strip()
    if not text or "\n" in text or text.startswith(("{", "[")) or ": " in text:
        return False
    return text.endswith((".yml", ".yaml", ".json")) or os.path.exists(os.path.expanduser(text))


def _type_name(value):
    if value is None:
        return "nothing (null)"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer"}.get(
        type(value), type(value).__name__
    )


def schema(kind):
    with open(os.path.join(SCHEMA_DIR, SCHEMA_FILES[kind])) as handle:
        return json.load(handle)


def _validator(kind):
    if kind not in _VALIDATORS:
        from jsonschema import Draft202012Validator

        _VALIDATORS[kind] = Draft202012Validator(schema(kind))
    return _VALIDATORS[kind]


def _known_keys(error):
    props = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    return set(props)


def did_you_mean(name, known):
    """``"; did you mean 'entrypoint'?"`` for the nearest known key of a mistyped one, else ``""``."""
    close = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return "; did you mean %r?" % close[0] if close else ""


def _expand(error, extra_ok):
    """Turn one jsonschema error into ``(path, message)`` items naming the exact field."""
    base = list(error.absolute_path)
    validator = error.validator
    instance = error.instance
    if validator == "required" and isinstance(instance, dict):
        return [
            (field_path(base + [name]), "required field is missing")
            for name in error.validator_value
            if name not in instance
        ]
    if validator == "additionalProperties" and isinstance(instance, dict) and error.validator_value is False:
        known = _known_keys(error)
        return [
            (field_path(base + [name]), "unknown field (not in the schema)" + did_you_mean(name, known))
            for name in sorted(instance)
            if name not in known and not extra_ok(name)
        ]
    if validator in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match

        return _expand(best_match(error.context), extra_ok)
    return [(field_path(base), _short(error.message))]


def _short(message):
    return message if len(message) <= 200 else message[:197] + "..."


_RESULTS = {}


def _never(name):
    return False


def _errors_of(validator, kind, data, extra_ok):
    """Sorted ``(path, message)`` pairs, memoised by content: a play validates the same records
    in several filters (preflight, render_job, review_job)."""
    try:
        key = (kind, extra_ok, json.dumps(data, sort_keys=True))
    except (TypeError, ValueError):
        key = None
    if key is not None and key in _RESULTS:
        return _RESULTS[key]
    items = set()
    for error in validator.iter_errors(data):
        items.update(_expand(error, extra_ok))
    result = tuple(sorted(items))
    if key is not None:
        if len(_RESULTS) >= 32:
            _RESULTS.clear()
        _RESULTS[key] = result
    return result


def validate(data, kind, extra_ok=None):
    """``{ok, errors: [{path, message}], data}`` for a document already loaded (never raises).

    ``extra_ok(name)`` tells which unknown keys to leave to a more specific check (legacy fields).
    """
    extra_ok = extra_ok or _never
    if not isinstance(data, dict):
        return {
            "ok": False,
            "errors": [{"path": "", "message": "the %s must be a mapping, not %s" % (TITLES[kind], _type_name(data))}],
            "data": None,
        }
    try:
        validator = _validator(kind)
    except ImportError:
        return {
            "ok": False,
            "errors": [{"path": "", "message": "the jsonschema Python package is required"}],
            "data": None,
        }
    except (OSError, ValueError) as exc:
        return {"ok": False, "errors": [{"path": "", "message": "cannot read the schema: %s" % exc}], "data": None}
    errors = [{"path": p, "message": m} for p, m in _errors_of(validator, kind, data, extra_ok)]
    return {"ok": not errors, "errors": errors, "data": data if not errors else None}


def load_and_validate(source, kind, extra_ok=None):
    """Load from a path/text/dict and validate; ``{ok, errors, data}``, never raises for bad input."""
    try:
        data = load_document(source)
    except InputError as exc:
        return {"ok": False, "errors": [{"path": "", "message": str(exc), "unreadable": True}], "data": None}
    result = validate(data, kind, extra_ok)
    result["raw"] = data
    return result


_DUMPER = []


def _dumper():
    """A safe dumper that writes multi-line strings (scripts) as literal blocks."""
    if not _DUMPER:
        yaml = _yaml()
        base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

        class Dumper(base):
            pass

        def represent_str(dumper, value):
            style = "|" if "\n" in value else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

        Dumper.add_representer(str, represent_str)
        _DUMPER.append(Dumper)
    return _DUMPER[0]


def dump_yaml(data):
    """Stable YAML text: same data (same key order) -> byte-identical output."""
    yaml = _yaml()
    return yaml.dump(
        to_plain(data),
        Dumper=_dumper(),
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=4096,
        indent=2,
    )
