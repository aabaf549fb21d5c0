"""Every exit code gpubench returns, in one place (the README's table is checked against this one by a test)."""

import signal
from enum import IntEnum


class Exit(IntEnum):
    OK = 0  # everything ran and passed; compare: no significant regression (improvements never fail)
    FAILED = 1  # a point failed verification, raised, crashed or timed out; compare: a point significantly slower
    USAGE = 2  # bad input, a bad kernel spec, a kernel nvcc rejects, unreadable or incompatible files, no GPU
    INCONCLUSIVE = 3  # compare --fail-on-inconclusive: nothing regressed but some points could not be decided
    SLOW_GPU = 4  # --replicate: a GPU ran slower than the node's median by more than the threshold
    HANGUP = 129  # SIGHUP (128 + 1, as a shell reports it): the terminal went away; every finished point is saved
    INTERRUPTED = 130  # Ctrl-C (SIGINT, 128 + 2): every finished point is saved
    USER1 = 138  # SIGUSR1 (128 + 10): a batch system's notice of the job's end (SGE's -notify, Slurm's --signal)
    USER2 = 140  # SIGUSR2 (128 + 12): as SIGUSR1
    TERMINATED = 143  # SIGTERM (128 + 15: kill, a CI timeout, the end of a Slurm job): every finished point is saved

    @classmethod
    def stopped_by(cls, signum: int | None) -> "Exit":
        """The code for a run stopped by this signal (None, or any other: Ctrl-C's)."""
        return {signal.SIGHUP: cls.HANGUP, signal.SIGTERM: cls.TERMINATED, signal.SIGUSR1: cls.USER1,
                signal.SIGUSR2: cls.USER2}.get(signum, cls.INTERRUPTED)


MEANING = {
    Exit.OK: "success: every point passed; `compare`: no significant regression (improvements never fail)",
    Exit.FAILED: "a point failed verification, raised, crashed its worker or timed out (all recorded, the rest "
                 "ran); `compare`: at least one point significantly slower by more than the threshold; `ab`: B "
                 "slower than A by more than the threshold",
    Exit.USAGE: "bad input (one line says what and what is allowed): options, suites, kernel specs, a kernel nvcc "
                "rejects, unreadable or incompatible results files, an output that exists without --force, "
                "no GPU or library",
    Exit.INCONCLUSIVE: "`compare --fail-on-inconclusive`: nothing regressed but some points could not be decided; "
                       "`ab`: the rounds could not decide",
    Exit.SLOW_GPU: "`--replicate`: every point passed, but a GPU ran slower than the node's median by more than "
                   "`--slow-threshold` (named, with its clocks and power): a health check for job schedulers",
    Exit.HANGUP: "hung up (SIGHUP): as for 130, the worker processes ended and every finished point saved",
    Exit.INTERRUPTED: "interrupted (Ctrl-C); every finished point is saved",
    Exit.USER1: "stopped by SIGUSR1 (a batch system's notice that the job ends: SGE's `-notify`, Slurm's `--signal`), "
                "as for 143",
    Exit.USER2: "stopped by SIGUSR2, as for 138",
    Exit.TERMINATED: "terminated (SIGTERM: `kill`, a CI timeout, the end of a Slurm job): as for 130, the worker "
                     "processes ended and every finished point saved, the run marked `interrupted`",
}
