# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A growing log file is exported incrementally: after the first read only what was written since is read and
redacted, and the export is byte for byte what a full export gives. The window merge is linear."""

import random

from ansible_collections.rlark.ops.plugins.module_utils import joblogs, stop_logs

SECRET_LINE = "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"


def full(path, tmp_path):
    return joblogs.export_file(str(path), "p", str(tmp_path)).text()


def test_continued_export_equals_a_full_one_and_reads_only_the_new_lines(tmp_path, monkeypatch):
    source = tmp_path / "p.log"
    source.write_text("Global Step: 1\n" + SECRET_LINE + "half a li")
    out = tmp_path / "out"
    out.mkdir()
    first = joblogs.export_file(str(source), "p", str(out))
    assert first.text().endswith("half a li\n") and "wJalrXUtnFEMI" not in first.text()
    with open(source, "a") as fh:
        fh.write("ne\nGlobal Step: 2\n" + SECRET_LINE)
    seen = []
    real = joblogs.may_hold_secret
    monkeypatch.setattr(joblogs, "may_hold_secret", lambda text: seen.append(text) or real(text))
    second = joblogs.export_file(str(source), "p", str(out), since=first)
    assert seen == ["half a line", "Global Step: 2", SECRET_LINE.strip()], "only the lines after the first read"
    monkeypatch.setattr(joblogs, "may_hold_secret", real)
    assert second.text() == full(source, out) and second.path != first.path
    assert (second.lines, second.bytes) == (5, len(second.text().encode()))
    assert first.text().endswith("half a li\n"), "the earlier export is left as it was"


def test_a_rewritten_shorter_file_is_exported_again_in_full(tmp_path):
    source = tmp_path / "p.log"
    source.write_text("a\nb\nc\n")
    first = joblogs.export_file(str(source), "p", str(tmp_path))
    source.write_text("x\n")
    again = joblogs.export_file(str(source), "p", str(tmp_path), since=first)
    assert again.text() == "x\n" and again.lines == 1


def test_export_files_continues_each_pod_from_its_own_export(tmp_path):
    logs = tmp_path / "logs" / "job"
    logs.mkdir(parents=True)
    (logs / "job-actor-0.log").write_text("1\n")
    (logs / "job-env-0.log").write_text("e\n")
    out = tmp_path / "out"
    out.mkdir()
    first = joblogs.export_logs("files", "job", str(out), logs_dir=str(tmp_path / "logs"))
    (logs / "job-actor-0.log").write_text("1\n2\n")
    second = joblogs.export_logs("files", "job", str(out), logs_dir=str(tmp_path / "logs"), since=first)
    assert second["job-actor-0"].text() == "1\n2\n" and second["job-actor-0"].source_offset == 4
    assert second["job-env-0"].text() == "e\n"


def naive_overlap(old, new):
    for size in range(min(len(old), len(new)), 0, -1):
        if old[-size:] == new[:size]:
            return size
    return 0


def test_overlap_is_the_longest_suffix_that_is_a_prefix():
    rand = random.Random(7)
    for _case in range(2000):
        old = [rand.choice("ab") for _i in range(rand.randint(0, 12))]
        new = [rand.choice("abc") for _i in range(rand.randint(0, 12))]
        assert stop_logs.overlap(old, new) == naive_overlap(old, new), (old, new)


def test_a_window_of_repeated_long_lines_merges_in_linear_time():
    line = "x" * 8192
    old = [line] * 2000
    new = [line] * 1000 + ["next"]
    assert stop_logs.overlap(old, new) == 1000
    merged = stop_logs.merge_log("\n".join(old) + "\n", "\n".join(new) + "\n")
    assert merged.count("\n") == 2001 and merged.endswith("next\n")
