"""How RLark's Go controller re-encodes a Task spec it copies from a Job template (divergence 7).

The controller decodes the Job into Go structs and encodes the Task from them: resource quantities come
out canonical (`1000m` -> `1`, `1024Mi` -> `1Gi`), empty lists vanish (omitempty slices), and the pod
template gains an empty `metadata` and every container an empty `resources` (non-pointer structs).
"""

import copy
import math
import re
from fractions import Fraction

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def parse_quantity(text):
    """(exact value, binary?) of a Kubernetes quantity string, or None when it is not one."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix], True
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:]), False
    return number * Fraction(10) ** _DECIMAL[suffix], False


def canonical_quantity(text):
    """Go's canonical form: binary suffixes kept for whole multiples of 1024, else decimal SI (nano rounded up)."""
    parsed = parse_quantity(text)
    if parsed is None or not isinstance(text, str):
        return text
    value, binary = parsed
    if binary and value.denominator == 1 and abs(value) >= 1024:
        mantissa, power = int(value), 0
        while power < 6 and mantissa % 1024 == 0:
            mantissa, power = mantissa // 1024, power + 1
        return "%d%s" % (mantissa, {v: k for k, v in _BINARY.items()}.get(power, ""))
    mantissa, exponent = math.ceil(value * 10**9), -9
    if mantissa == 0:
        return "0"
    while exponent < 18 and mantissa % 1000 == 0:
        mantissa, exponent = mantissa // 1000, exponent + 3
    return "%d%s" % (mantissa, _SUFFIX[exponent])


def _drop_empty_lists(value):
    if isinstance(value, dict):
        return {k: _drop_empty_lists(v) for k, v in value.items() if v != [] and v is not None}
    if isinstance(value, list):
        return [_drop_empty_lists(v) for v in value]
    return value


def _map_quantities(resources, fn):
    for key in ("limits", "requests"):
        if isinstance(resources.get(key), dict):
            resources[key] = {name: fn(q) for name, q in resources[key].items()}


def go_encoded_spec(spec):
    """The Task spec exactly as RLark's controller writes it."""
    spec = _drop_empty_lists(copy.deepcopy(spec))
    template = ((spec.get("kubernetes") or {}).get("workload") or {}).get("template")
    if isinstance(template, dict):
        template.setdefault("metadata", {})
        pod = template.get("spec") or {}
        for key in _CONTAINER_LISTS:
            for container in pod.get(key) or []:
                container.setdefault("resources", {})
                _map_quantities(container["resources"], canonical_quantity)
        for volume in pod.get("volumes") or []:
            empty_dir = volume.get("emptyDir")
            if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
                empty_dir["sizeLimit"] = canonical_quantity(empty_dir["sizeLimit"])
    return spec


def _memory_quantity(text):
    """What a decoded Quantity compares as in Go: binary amounts by value, decimal ones as written."""
    parsed = parse_quantity(text)
    return ("binary", parsed[0]) if parsed and parsed[1] else ("decimal", str(text).strip())


def _drop_empty_dicts(value):
    if isinstance(value, dict):
        return {k: _drop_empty_dicts(v) for k, v in value.items() if v != {} and v is not None}
    if isinstance(value, list):
        return [_drop_empty_dicts(v) for v in value]
    return value


def go_memory_view(spec):
    """A spec as RLark's `reflect.DeepEqual` sees it after decoding: zero structs equal absent ones,
    an empty list differs from none, and `1000m` differs from `1` (Quantity keeps its scale)."""
    spec = copy.deepcopy(spec)
    pod = (((spec.get("kubernetes") or {}).get("workload") or {}).get("template") or {}).get("spec") or {}
    for key in _CONTAINER_LISTS:
        for container in pod.get(key) or []:
            if isinstance(container.get("resources"), dict):
                _map_quantities(container["resources"], _memory_quantity)
    return _drop_empty_dicts(spec)
