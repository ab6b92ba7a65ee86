"""The pass share of an Array API conformance run (.ci/array-api-conformance), from its
pytest-json-report file; exits 1 below the floor given, if the run left out the linalg or
fft extension, or if an id of the skips file matched no test.

    python .ci/array_api_share.py REPORT.json SKIPS.txt 0.97

The share is passed / (passed + failed + errors + tests the skips file left out): a test the
skips file names counts as not passing. The suite's own skips (tests of later API versions,
tests it marks flaky) count for neither side.
"""

from __future__ import annotations

import json
import sys

SKIPS_FILE_MARK = "--skips-file"
MISSING_EXTENSION_MARKS = ("not found in array module", "disabled in --disable-extensions")


def _skip_reason(test: dict) -> str:
    for stage in ("setup", "call"):
        longrepr = test.get(stage, {}).get("longrepr")
        if longrepr:
            return str(longrepr)
    return ""


def _names(nodeid: str, skip_id: str) -> bool:
    """Whether the skips file's ``skip_id`` names the test ``nodeid`` (or its parametrizations)."""
    return nodeid == skip_id or nodeid.startswith((skip_id + "[", skip_id + "::"))


def main(report_path: str, skips_path: str, floor: float) -> int:
    with open(report_path) as f:
        tests = json.load(f)["tests"]
    with open(skips_path) as f:
        skip_ids = [line.strip() for line in f if line.strip()]
    passed, not_passing, left_out, missing = 0, [], [], []
    for test in tests:
        outcome = test["outcome"]
        if outcome == "passed":
            passed += 1
        elif outcome in ("failed", "error"):
            not_passing.append(test["nodeid"])
        elif outcome == "skipped":
            reason = _skip_reason(test)
            if SKIPS_FILE_MARK in reason:
                left_out.append(test["nodeid"])
            elif any(mark in reason for mark in MISSING_EXTENSION_MARKS):
                missing.append(test["nodeid"])
    counted = passed + len(not_passing) + len(left_out)
    share = passed / counted if counted else 0.0
    for nodeid in not_passing:
        print(f"  not passing: {nodeid}")
    print(
        f"Array API conformance: {passed} of {counted} passed ({share:.1%}; floor {floor:.0%}): "
        f"{len(not_passing)} failed, {len(left_out)} left out by .ci/array-api-skips.txt"
    )
    unmatched = [i for i in skip_ids if not any(_names(nodeid, i) for nodeid in left_out)]
    if unmatched:
        print(f"the skips file names tests the suite does not have: {', '.join(unmatched)}")
        return 1
    if missing:
        print(f"{len(missing)} tests of the linalg or fft extension did not run, e.g. {missing[0]}")
        return 1
    if share < floor:
        print(f"below the floor of {floor:.0%}: fix the failures above (never by skipping them)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
