"""The environment a run records: the machine and software that produced its numbers."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from gpubench import __version__


def git_commit() -> str:
    """$GPUBENCH_COMMIT where it is set (a copy of the checkout on another machine, whose .git may be missing or
    stale), else the checkout's commit (with '+dirty' for local changes), else "unknown"."""
    if os.environ.get("GPUBENCH_COMMIT"):
        return os.environ["GPUBENCH_COMMIT"]
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
        if head.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "unknown"


def collect(backend, precisions=None) -> dict:
    """What a run records of its machine; the backend measures the ceilings of `precisions` (None: all)."""
    env = backend.environment(precisions)
    env["software"] = {
        "gpubench": __version__,
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        **env.get("software", {}),
    }
    env["host"] = {"name": platform.node(), "os": platform.platform()}
    env["time"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return env
