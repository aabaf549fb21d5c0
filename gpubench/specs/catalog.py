"""The catalog: every variant a command may use, the built-in ones (cuda_src/<op>/variants.toml) and a project's
own, in declaration order. What the CLI, sweeps, suites, tables and tests ask for variants.
"""

from __future__ import annotations

import functools
from pathlib import Path

from gpubench import ops
from gpubench.core import paths
from gpubench.core.errors import GpubenchError
from gpubench.specs.files import parse_specs, read_toml
from gpubench.specs.parse import SpecError
from gpubench.specs.variant import Variant

SPEC_FILE = "variants.toml"  # each op's built-in specs: cuda_src/<op>/variants.toml, found by itself


def kernels_dir() -> Path:
    """The built-in kernel sources (package data; a real directory in both wheel and editable installs)."""
    return paths.cuda_src_dir()


@functools.lru_cache(maxsize=None)
def builtin() -> tuple[Variant, ...]:
    """The built-in variants, one spec file per op folder of cuda_src/ (named sets are shared between them), in
    the ops' order."""
    names = [f"{op.name}/{SPEC_FILE}" for op in ops.builtin() if (kernels_dir() / op.name / SPEC_FILE).is_file()]
    documents = [(name, read_toml(kernels_dir() / name, "built-in specs")) for name in names]
    sets = {k: v for _, data in documents for k, v in data.get("sets", {}).items()}
    variants = [v for name, data in documents
                for v in parse_specs(data, f"cuda_src/{name}", (kernels_dir() / name).parent, builtin=True,
                                     shared_sets=sets)]
    return tuple(variants)


class Catalog:
    """The variants a command may use: the built-in ones and a project's own, in declaration order."""

    def __init__(self, variants):
        self.all: tuple[Variant, ...] = tuple(variants)

    @classmethod
    def with_user(cls, user: list[Variant]) -> Catalog:
        base = builtin()
        for v in user:
            twin = next((b for b in base if (b.op, b.backend, b.name) == (v.op, v.backend, v.name)), None)
            if twin is not None:
                raise SpecError(f"{v.entry.origin}: variant {v.name!r}: a built-in {v.op} variant has that name; "
                                "choose another")
        return cls([*base, *user])

    def variants(self, op: str, backend: str) -> list[Variant]:
        return [v for v in self.all if v.op == op and v.backend == backend]

    def get(self, op: str, backend: str, name: str) -> Variant:
        for v in self.variants(op, backend):
            if v.name == name:
                return v
        allowed = ", ".join(v.name for v in self.variants(op, backend))
        raise GpubenchError(f"unknown {op} variant {name!r} for the {backend} backend: allowed are {allowed}")

    def select(self, op: str, backend: str, names: list[str] | None) -> list[Variant]:
        """The named variants in catalog order, or the lab's default set plus the project's own."""
        if not names:
            return [v for v in self.variants(op, backend) if v.entry.lab or not v.entry.builtin]
        chosen = {self.get(op, backend, n).name for n in names}
        return [v for v in self.variants(op, backend) if v.name in chosen]

    def baselines(self, op: str, backend: str) -> list[Variant]:
        """The libraries the op's variants are measured against (one per precision: cuBLAS, and cuBLASLt for fp8)."""
        return [v for v in self.variants(op, backend) if v.entry.baseline]
