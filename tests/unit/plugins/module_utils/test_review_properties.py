# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property tests: mutated and malformed records never raise, and stop conditions always refuse."""

import copy

from ansible_collections.rlark.ops.plugins.module_utils import findings as findings_core
from ansible_collections.rlark.ops.plugins.module_utils.manifest import dump_yaml, to_plain
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight, review_for_submission
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact
from ansible_collections.rlark.ops.plugins.module_utils.render import render_job
from ansible_collections.rlark.ops.plugins.module_utils.review import review_job
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from migration_inputs import example
from test_review_table import RECORD_CASES

# Written out again on purpose: an oracle independent of review.LEGACY_FIELDS.
LEGACY = {
    "worker_group",
    "node_names",
    "num_workers",
    "disable_ray",
    "submit_job",
    "runtime_env_json",
    "extra_files",
    "rlinf_node_rank",
    "run_on_host",
}
ERROR_CASES = [c for c in RECORD_CASES if c[4] == "error"]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10),
    st.text(max_size=12),
    st.sampled_from(["a,b", "", "sha256:xyz", "worker_group", "rlinf.io/device", "/", "/rlark", "Docker"]),
    st.lists(st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(
        st.sampled_from(["worker_group", "x", "name", "num_workers", "version"]), st.integers(), max_size=2
    ),
)


def _slots(node, out):
    """Every (container, key) pair of a document, for in-place mutation."""
    if isinstance(node, dict):
        for key in list(node):
            out.append((node, key))
            _slots(node[key], out)
    elif isinstance(node, list):
        for index in range(len(node)):
            out.append((node, index))
            _slots(node[index], out)
    return out


def _walk_keys(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _walk_keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk_keys(value)


def oracle_stop(manifest, profile):
    """Independent, simple stop-condition checks; True when the inputs must be refused."""
    try:
        if not isinstance(manifest, dict) or not isinstance(profile, dict):
            return True
        if any(str(k).lower() in LEGACY for k in list(_walk_keys(manifest)) + list(_walk_keys(profile))):
            return True
        roles = manifest["roles"]
        heads = [r for r in roles if r.get("head") is True]
        if len(heads) != 1:
            return True
        for r in roles:
            image = r["image"]
            if not (str(image.get("digest", "")).startswith("sha256:") or "@sha256:" in str(image["reference"])):
                return True
        for entry in profile["roles"]:
            selector = entry["selector"]
            if not selector or any("," in str(v) for v in selector.values()):
                return True
            if entry["name"] == heads[0]["name"] and entry["replicas"] != 1:
                return True
        if manifest["profile"]["version"] != profile["version"]:
            return True
        if profile["manifest"]["version"] != manifest["version"]:
            return True
    except Exception:  # a structure this broken fails the schema
        return True
    return False


def _well_formed(found):
    assert isinstance(found, list)
    for f in found:
        assert set(f) == {"id", "severity", "path", "message", "hint"}
        assert f["severity"] in ("error", "warning") and isinstance(f["message"], str)
    assert not [f for f in found if f["id"] == "review-internal-error"], found


@SETTINGS
@given(data=st.data())
def test_random_corruption_never_raises_and_stops_are_refused(data):
    name = data.draw(st.sampled_from(["sandbox", "multi-role"]))
    manifest, profile = example(name)
    for _step in range(data.draw(st.integers(1, 4))):
        doc = data.draw(st.sampled_from(["manifest", "profile"]))
        slots = _slots(manifest if doc == "manifest" else profile, [])
        container, key = data.draw(st.sampled_from(slots))
        action = data.draw(st.sampled_from(["replace", "delete", "add-key"]))
        if action == "delete":
            del container[key]
        elif action == "add-key" and isinstance(container[key], dict):
            container[key][data.draw(st.sampled_from(sorted(LEGACY) + ["unknown", "name"]))] = data.draw(junk)
        else:
            container[key] = data.draw(junk)
    before = copy.deepcopy((manifest, profile))
    result = preflight(manifest, profile)
    assert (manifest, profile) == before, "preflight must not modify its inputs"
    _well_formed(result["findings"])
    assert result["ok"] == (not findings_core.has_errors(result["findings"]))
    if oracle_stop(manifest, profile):
        assert result["job"] is None and not result["ok"]
    if result["ok"]:
        # A clean result is stable: redaction changes nothing, a second review agrees.
        assert redact(to_plain(manifest)) == to_plain(manifest)
        assert review_for_submission(result["job"], manifest, profile)["ok"]
    # The Job reviewed on its own (or garbage) never raises either.
    _well_formed(review_job(result["rendered"] if result["rendered"] is not None else data.draw(junk)))


@SETTINGS
@given(data=st.data())
def test_combined_stop_conditions_are_always_refused(data):
    cases = data.draw(st.lists(st.sampled_from(ERROR_CASES), min_size=1, max_size=3, unique_by=lambda c: c[0]))
    names = {c[0] for c in cases}
    # These two repair each other: the digest removed, the reference pinned is a valid image.
    assume(not {"tag-without-digest", "digest-conflict"} <= names)
    manifest, profile = example(cases[0][1])
    applied = 0
    for case in cases:
        if case[1] != cases[0][1]:
            continue
        try:
            case[2](manifest, profile)
            applied += 1
        except (KeyError, StopIteration, ValueError, AttributeError, TypeError, IndexError):
            continue  # this case does not apply after an earlier one
    result = preflight(manifest, profile)
    _well_formed(result["findings"])
    assert applied >= 1
    assert result["job"] is None and not result["ok"], [c[0] for c in cases]


def test_render_is_deterministic_and_yaml_byte_identical():
    for name in ("sandbox", "multi-role"):
        first = dump_yaml(render_job(*example(name)))
        for _repeat in range(3):
            assert dump_yaml(render_job(*example(name))) == first
        assert dump_yaml(preflight(*example(name))["job"]) == first
        assert "&id" not in first and "*id" not in first  # no YAML aliases from shared anchors


def test_render_same_for_file_and_dict_inputs():
    import os

    from migration_inputs import EXAMPLES

    folder = os.path.join(EXAMPLES, "sandbox")
    from_files = preflight(os.path.join(folder, "launch_manifest.yml"), os.path.join(folder, "deployment_profile.yml"))
    assert dump_yaml(from_files["job"]) == dump_yaml(preflight(*example("sandbox"))["job"])


job_junk = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-2, 3), st.text(max_size=8), st.sampled_from(["main", "head", "Raw"])
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.sampled_from(
                [
                    "spec",
                    "tasks",
                    "kubernetes",
                    "workload",
                    "template",
                    "containers",
                    "env",
                    "name",
                    "head",
                    "replicas",
                    "volumes",
                    "volumeMounts",
                    "resources",
                    "requests",
                    "limits",
                    "nodeSelector",
                    "metadata",
                    "runScript",
                    "worker_group",
                ]
            ),
            children,
            max_size=4,
        ),
    ),
    max_leaves=25,
)


@SETTINGS
@given(job=job_junk, with_records=st.booleans())
def test_review_of_arbitrary_job_shapes_never_raises(job, with_records):
    records = example("sandbox") if with_records else (None, None)
    found = review_job(job, *records)
    _well_formed(found)
    assert findings_core.has_errors(found) or isinstance(job, dict)
    assert review_for_submission(job, *records)["job"] is None or not findings_core.has_errors(found)
