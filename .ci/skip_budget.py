"""The skip budget: fail when a pytest run skipped (or xfailed) a test the allow-list does not name.

usage: skip_budget.py ALLOW_LIST JUNIT_XML...   (the Makefile's pytest runs write .build/pytest-exit/*.xml)
Exit 0 when every skip is allowed, 1 otherwise (each offending test is printed with pytest's reason).
"""

import re
import sys
import xml.etree.ElementTree as ET


def matches(node, pattern):
    """``*`` matches anything; every other character (brackets of parameter ids too) is literal."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), node) is not None


def load_allow_list(path):
    """[(pattern, reason)]; raises ValueError naming a line that has no reason."""
    entries = []
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            pattern, _sep, reason = text.partition("#")
            if not reason.strip():
                raise ValueError("%s:%d: %r has no reason after '#'" % (path, number, pattern.strip()))
            entries.append((pattern.strip(), reason.strip()))
    return entries


def skipped_tests(junit_path):
    """[(node id, reason)] of the skipped/xfailed testcases of one JUnit XML report."""
    out = []
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None:
            continue
        module = (case.get("classname") or "").replace(".", "/")
        # classname is "tests.integration.test_x" or "tests.integration.test_x.TestClass".
        parts = module.split("/")
        if parts and parts[-1][:1].isupper():
            node = "/".join(parts[:-1]) + ".py::" + parts[-1] + "::" + case.get("name", "")
        else:
            node = module + ".py::" + case.get("name", "")
        out.append((node, skipped.get("message") or skipped.get("type") or ""))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        allowed = load_allow_list(argv[0])
    except ValueError as exc:
        print("ci: skip allow-list: %s" % exc, file=sys.stderr)
        return 1
    bad = []
    total = 0
    for report in argv[1:]:
        for node, reason in skipped_tests(report):
            total += 1
            if not any(matches(node, pattern) for pattern, _why in allowed):
                bad.append((node, reason))
    for node, reason in bad:
        print("ci: skipped and not in .ci/allowed-skips.txt: %s (%s)" % (node, reason), file=sys.stderr)
    print("ci: skip budget: %d skipped, %d allowed, %d not allowed" % (total, total - len(bad), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
