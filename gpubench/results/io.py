"""Results files: reading (every way a file can be wrong becomes one line), atomic saving, and the writer that
rewrites a run's file after every point so that an interrupted sweep keeps what it measured."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpubench.errors import GpubenchError
from gpubench.paths import temporary
from gpubench.results.model import SCHEMA, Point, Run, RunStatus
from gpubench.results.schema import migrate, run_from


def save(run: Run, path: str | Path) -> Path:
    """Write atomically: readers (and a crash or a full disk mid-write) never see half a file."""
    path = Path(path)
    tmp = temporary(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as f:
            f.write(run.to_json())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise GpubenchError(f"cannot write results to {path} ({e.strerror or e}); the file keeps its last "
                            "complete save") from None
    return path


class RunWriter:
    """Appends points to a run and rewrites its file after each one."""

    def __init__(self, run: Run, path: str | Path):
        self.run, self.path = run, Path(path)
        save(run, self.path)

    def add(self, point: Point) -> None:
        self.run.points.append(point)
        save(self.run, self.path)

    def finish(self, status: RunStatus) -> Path:
        self.run.status = RunStatus(status)
        return save(self.run, self.path)


def load(path: str | Path) -> Run:
    """Read a saved run (of any version this gpubench knows), turning every way a file can be wrong into one
    line that says which."""
    path = Path(path)
    if not path.is_file():
        raise GpubenchError(f"results file {path} does not exist" if not path.exists() else
                            f"results file {path} is not a file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise GpubenchError(f"results file {path} cannot be read ({e})") from None
    if not text.strip():
        raise GpubenchError(f"results file {path} is empty")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise GpubenchError(f"results file {path} is not valid JSON (truncated or corrupt?): {e}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise GpubenchError(f"{path} is not a gpubench results file (no \"schema\": \"{SCHEMA}\")")
    return run_from(migrate(data, path), path)
