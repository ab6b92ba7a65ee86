"""Bugs the differential suite found that are still open (issue 22).

Each has the region of calls where it shows, which the generated tests leave out (with
``assume``), and a minimal reproduction that ``tests/test_differential.py`` runs marked
``xfail(strict=True)``: once the bug is fixed, that test passes, fails as XPASS, and the entry
(region and all) must be deleted, so the generated search covers the region again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.differential.compare import Call, Placement


@dataclass(frozen=True)
class KnownBug:
    reason: str
    applies: Callable[[Call, Placement], bool]
    call: Call
    placement: Placement


# Open bugs, by a short name: KnownBug(reason, the region of calls and placements where it shows,
# a minimal reproduction call, its placement). None is open now; for example:
#
#     "softmax-of-integers-wraps": KnownBug(
#         "issue 22: nn.softmax of integers subtracts the max in the integer dtype, which wraps",
#         lambda call, p: call.label.startswith("nn.softmax") and call.args[0].dtype.kind in "iu",
#         make_call("nn.softmax", np.array([127, -3], np.int8)),
#         Placement("numpy_in"),
#     ),
KNOWN_BUGS: dict[str, KnownBug] = {}
