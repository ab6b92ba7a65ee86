"""What one process's run of a suite found: the cases passed and failed, and what they covered."""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import spmd


def say(line: str) -> None:
    """Print ``line`` in one write, so that mpiexec does not interleave it with others."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


@dataclass
class Tally:
    """Cases passed and failed on this process, and how many of each kind ran."""

    every: int  # run every ``every``-th case
    passed: int = 0
    failures: list[str] = field(default_factory=list)
    covered: Counter = field(default_factory=Counter)

    def check(self, label: str, run: Callable, *args) -> None:
        """Run one case; an error is recorded (and shown at once) and the suite goes on."""
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                run(*args)
        except Exception as error:
            message = f"{label}: {type(error).__name__}: {error}"
            self.failures.append(message)
            say(f"[process {spmd.process_index()}] FAILED {message}")
        else:
            self.passed += 1

    def sampled(self, index: int, offset: int = 0) -> bool:
        """Whether to run the case at ``index`` (counting from ``offset``)."""
        return (index + offset) % self.every == 0
