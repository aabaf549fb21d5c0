"""Which backend runs when the command does not name one: the rule the command line and the pytest plugin share.

In order: the backend named where the call is made (``--backend``, ``--gpubench-backend``), else the
GPUBENCH_BACKEND environment variable, else the project's ``backend = "cpu"`` (gpubench.toml, or [tool.gpubench] in
pyproject.toml), else cuda where its Python stack (PyCUDA and CuPy) is installed, else cpu. Only that last guess,
the CPU on a machine without the GPU stack, is announced (one line, naming what is missing and how to insist): the
other choices are the user's own words. The check only looks for the packages (nothing is imported), so it costs
no time; a machine with the stack but no GPU still stops with one line on cuda, which names --backend cpu.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from enum import StrEnum

from gpubench.core.errors import GpubenchError, NoDevice
from gpubench.specs.parse import BACKENDS

ENV = "GPUBENCH_BACKEND"
CUDA, CPU = "cuda", "cpu"
GPU_STACK = (("pycuda", "PyCUDA"), ("cupy", "CuPy"))  # (import name, what the note calls it)


class Source(StrEnum):
    """Where the backend came from."""

    ASKED = "asked"  # the command line's option
    ENVIRONMENT = "environment"  # GPUBENCH_BACKEND
    PROJECT = "project"  # the project file's `backend`
    GUESSED = "guessed"  # from what is installed


@dataclass(frozen=True)
class Choice:
    name: str  # "cuda" | "cpu"
    source: Source
    missing: str | None = None  # a guess of cpu: the part of the GPU stack that is not installed

    def note(self, insist: str) -> str | None:
        """The one line that announces a guessed CPU backend (`insist`: the option that names cuda where the note
        is shown), or None for any other choice."""
        if self.source != Source.GUESSED or self.name != CPU:
            return None
        return (f"{self.missing} is not installed, so this runs on the CPU backend (NumPy); {insist} cuda insists "
                f"on the GPU, {ENV}=cpu or backend = \"cpu\" in gpubench.toml silences this note")


def gpu_stack_missing() -> str | None:
    """The first package of the GPU stack that is not installed (its name), or None where all are."""
    for module, name in GPU_STACK:
        if importlib.util.find_spec(module) is None:
            return name
    return None


INSTALL = {"PyCUDA": "pip install 'gpubench[gpu]'", "CuPy": "pip install cupy-cuda13x (cupy-cuda12x on CUDA 12)"}


def check_gpu_stack() -> None:
    """NoDevice naming the first missing package of the GPU stack and how to install it (the CUDA backend's own
    words), at no cost: for a command that can only run on the GPU, before it starts a worker to find out."""
    missing = gpu_stack_missing()
    if missing:
        raise NoDevice(f"{missing} is not installed: {INSTALL[missing]}")


def from_environment() -> str | None:
    """GPUBENCH_BACKEND's backend (unset or empty: None); one line naming the allowed ones where it is another."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    if value not in BACKENDS:
        raise GpubenchError(f"{ENV}={value!r} is not a backend; allowed: {', '.join(BACKENDS)} (or leave it unset)")
    return value


def choose(asked: str | None, config: str | None = None) -> Choice:
    """The backend to run on: `asked` where given, else GPUBENCH_BACKEND, else the project's (the one `config` or
    GPUBENCH_CONFIG names, or found from the current directory), else the guess from what is installed."""
    if asked is not None:
        return Choice(asked, Source.ASKED)
    named = from_environment()
    if named is not None:
        return Choice(named, Source.ENVIRONMENT)
    from gpubench.specs import project

    configured = project.configured_backend(config)
    if configured is not None:
        return Choice(configured, Source.PROJECT)
    missing = gpu_stack_missing()
    return Choice(CPU, Source.GUESSED, missing) if missing else Choice(CUDA, Source.GUESSED)
