"""Every exit code gpubench returns, in one place (the README's table is checked against this one by a test)."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0  # everything ran and passed; compare: no significant regression (improvements never fail)
    FAILED = 1  # a point failed verification, raised, crashed or timed out; compare: a point significantly slower
    USAGE = 2  # bad input, a bad kernel spec, a kernel nvcc rejects, unreadable or incompatible files, no GPU
    INCONCLUSIVE = 3  # compare --fail-on-inconclusive: nothing regressed but some points could not be decided
    SLOW_GPU = 4  # --replicate: a GPU ran slower than the node's median by more than the threshold
    INTERRUPTED = 130  # Ctrl-C: every finished point is saved


MEANING = {
    Exit.OK: "success: every point passed; `compare`: no significant regression (improvements never fail)",
    Exit.FAILED: "a point failed verification, raised, crashed its worker or timed out (all recorded, the rest "
                 "ran); `compare`: at least one point significantly slower by more than the threshold",
    Exit.USAGE: "bad input (one line says what and what is allowed): options, suites, kernel specs, a kernel nvcc "
                "rejects, unreadable or incompatible results files, an output that exists without --force, "
                "no GPU or library",
    Exit.INCONCLUSIVE: "`compare --fail-on-inconclusive`: nothing regressed but some points could not be decided",
    Exit.SLOW_GPU: "`--replicate`: every point passed, but a GPU ran slower than the node's median by more than "
                   "`--slow-threshold` (named, with its clocks and power): a health check for job schedulers",
    Exit.INTERRUPTED: "interrupted (Ctrl-C); every finished point is saved",
}
