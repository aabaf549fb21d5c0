"""A user's project: the gpubench.toml (or [tool.gpubench] in pyproject.toml) that declares their own variants.

Found the way pytest finds its configuration: from the current directory upwards, the first directory with a
gpubench.toml, or with a pyproject.toml that has a [tool.gpubench] table, is the project. ``--config FILE``
or the GPUBENCH_CONFIG environment variable names the file directly instead. The file holds, in the format of
the built-in specs (cuda_src/README.md):

    tuned = "tuned"            # optional: keep tuned configurations in this directory of the project
    backend = "cpu"            # optional: the backend a command runs on when it names none (cuda or cpu)
    [sets]                     # optional: named lists of configurations
    [[family]]                 # optional: what several variants share
    [[variant]]                # one table per variant; paths are relative to this file
    [[op]]                     # optional: your own ops (gpubench/ops/declared.py), which your variants may compute
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpubench import ops
from gpubench.core import paths
from gpubench.ops import declared
from gpubench.core.errors import GpubenchError
from gpubench.specs.parse import BACKENDS, SpecError
from gpubench.specs.files import parse_specs, read_toml
from gpubench.specs.variant import Variant

FILE = "gpubench.toml"
KEYS = {"variant", "family", "sets", "tuned", "op", "backend"}  # what the docstring above and the README declare


@dataclass
class Project:
    path: Path | None = None  # the file that declared it; None: no project here
    variants: list[Variant] = field(default_factory=list)
    tuned_dir: Path | None = None
    ops: list = field(default_factory=list)  # its own ops' declarations
    backend: str | None = None  # `backend = "cpu"`: the default of every command run in the project


def find(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / FILE
        if candidate.is_file():
            return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                tool = read_toml(pyproject, "pyproject.toml").get("tool")
            except SpecError:
                continue  # somebody else's broken pyproject.toml is not ours to judge
            if isinstance(tool, dict) and "gpubench" in tool:
                return pyproject
    return None


def _table(path: Path) -> dict:
    data = read_toml(path, "project file")
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        data = tool.get("gpubench") if isinstance(tool, dict) else None
        if data is None:
            raise SpecError(f"{path}: has no [tool.gpubench] table")
        if not isinstance(data, dict):
            raise SpecError(f"{path}: tool.gpubench must be a table ([tool.gpubench]), got {data!r:.40}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise SpecError(f"{path}: unknown key(s) {', '.join(unknown)}; allowed are {', '.join(sorted(KEYS))}")
    return data


def _backend(path: Path, data: dict) -> str | None:
    backend = data.get("backend")
    if backend is not None and backend not in BACKENDS:
        raise SpecError(f"{path}: backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def configured_backend(config: str | Path | None = None, start: Path | None = None) -> str | None:
    """The project's `backend` (None where it sets none, or where there is no project), read without its variants."""
    path = _path(config, start)
    return None if path is None else _backend(path, _table(path))


def _path(config: str | Path | None, start: Path | None) -> Path | None:
    """The project file `config` (or GPUBENCH_CONFIG) names, else the one found from `start`; None: no project."""
    named = config if config is not None else os.environ.get("GPUBENCH_CONFIG") or None
    if named is not None:
        path = Path(named).expanduser()
        source = "--config" if config is not None else "GPUBENCH_CONFIG"
        if not str(named).strip():  # Path('') is the current directory: the message would name nothing
            raise GpubenchError(f"{source} is empty (an unset variable?): give a gpubench.toml or a pyproject.toml "
                                "with [tool.gpubench], or leave it out")
        if not path.is_file():
            raise GpubenchError(f"{source}: {named} is not a file (give a gpubench.toml or a pyproject.toml with "
                                "[tool.gpubench])")
        return path
    return find(paths.resolved(start or Path.cwd()))


def load(config: str | Path | None = None, start: Path | None = None) -> Project:
    """The project named by `config` (or GPUBENCH_CONFIG), else the one found from `start` (the current dir)."""
    path = _path(config, start)
    if path is None:
        return Project()
    data = _table(path)
    tuned = data.get("tuned")
    if tuned is not None and not isinstance(tuned, str):
        raise SpecError(f"{path}: tuned must be a directory path (a string), got {tuned!r}")
    root = paths.resolved(path.parent)
    mine = declared.declarations(data.get("op", []), str(path), root)
    for decl in mine:  # before its variants, which may compute them
        ops.declare(decl.op_def())
    variants = parse_specs(data, str(path), root)
    return Project(path, variants, paths.resolved(path.parent / tuned) if tuned else None, mine,
                   _backend(path, data))
