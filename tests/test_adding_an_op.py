"""Adding an op is adding files, not editing them: a toy op (z = 2·x + y) dropped into a copy of gpubench as one
module under gpubench/ops/ and one spec file under cuda_src/<op>/ is swept on the CPU backend, saved, shown,
compared and reported, with no other file of the package touched. docs/contributing/adding-an-op.md lists the same
files."""

import json
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

AXPY = '''"""A toy op: z = 2·x + y over vectors of n elements (memory-bound: rated in GB/s)."""

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.ops import params
from gpubench.ops.base import Array, OpDef, Param, ParamKind, Shape, TableLayout, enum_field, positive


class Layout(StrEnum):
    FLAT = "flat"


@dataclass(frozen=True)
class AxpyShape(Shape):
    n: int
    dtype: DType = DType.FP32
    layout: Layout = Layout.FLAT

    op: ClassVar[str] = "axpy"
    LAYOUT: ClassVar[type] = Layout
    DEFAULT_LAYOUT: ClassVar[Layout] = Layout.FLAT
    KEYS: ClassVar[tuple] = ("n", "dtype", "layout")
    PLOT_AXIS: ClassVar[str] = "elements n"

    def __post_init__(self):
        positive("an axpy", n=self.n)
        enum_field(self, "dtype", DType)
        enum_field(self, "layout", Layout)

    flops = property(lambda self: 2.0 * self.n)
    min_bytes = property(lambda self: 3.0 * self.n * PRECISIONS[self.dtype].in_bytes)
    reduction = property(lambda self: 1)
    output_elems = property(lambda self: self.n)
    label = property(lambda self: str(self.n))
    plot_x = property(lambda self: self.n)

    def record(self):
        return {"n": self.n, "dtype": str(self.dtype), "layout": str(self.layout)}

    def array_dims(self):
        return {"x": (self.n,), "y": (self.n,), "z": (self.n,)}

    def dims(self):
        return {"n": self.n}


def reference(xp, shape, values, dtype="float64"):
    return {"z": 2 * values["x"].astype(dtype) + values["y"].astype(dtype)}


def problems(values, where, strict):
    sizes = params.ints(values.get("n", [1024]), "--n" if strict else f"{where}.n")
    return [AxpyShape(n) for n in sizes], []


OP = OpDef(name="axpy", summary="z = 2·x + y", noun="axpy", shape=AxpyShape,
           arrays=(Array("x"), Array("y"), Array("z", output=True)), dims=("n",), reference=reference,
           params=(Param("n", ParamKind.INTS, "Vector lengths, comma-separated", default=(1024,)),),
           problems=problems, sample=AxpyShape(1000), table=TableLayout("NumPy", "speed vs library", str),
           by_flops=False, emulations={"numpy": reference})
'''

SPEC = '''[[variant]]
name = "numpy"
op = "axpy"
backend = "cpu"
runner = "numpy"
summary = "NumPy's 2 * x + y"
baseline = true
lab = true
'''


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_a_toy_op_is_two_new_files_and_runs_end_to_end(tmp_path):
    house = tmp_path / "house"
    for folder in ("gpubench", "cuda_src", "configs"):
        shutil.copytree(REPO / folder, house / folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = _digests(house)
    (house / "gpubench" / "ops" / "axpy.py").write_text(AXPY)
    (house / "cuda_src" / "axpy").mkdir()
    (house / "cuda_src" / "axpy" / "variants.toml").write_text(SPEC)
    after = _digests(house)
    added = sorted(set(after) - set(before))
    edited = sorted(k for k in before if after.get(k) != before[k])
    assert added == ["cuda_src/axpy/variants.toml", "gpubench/ops/axpy.py"] and not edited

    env = {**os.environ, "PYTHONPATH": str(house), "GPUBENCH_CACHE": str(tmp_path / "cache")}
    env.pop("GPUBENCH_CONFIG", None)
    work = tmp_path / "work"
    work.mkdir()

    def gpubench(*args):
        return subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)

    swept = gpubench("axpy", "--n", "1000,100000", "--backend", "cpu", "--reps", "5", "-o", "a.json")
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert "axpy · best configuration per variant" in swept.stdout and "saved 2 points" in swept.stderr
    again = gpubench("sweep", "axpy", "--n", "1000,100000", "--backend", "cpu", "--reps", "5", "-o", "b.json")
    assert again.returncode == 0, again.stdout + again.stderr
    shown = gpubench("show", "a.json", "--format", "csv")
    assert shown.returncode == 0 and shown.stdout.splitlines()[1].startswith("axpy,numpy,"), shown.stdout
    # compare reads the new op's runs: each point matched and judged (the two runs' host timings on a busy CI machine
    # may differ by any amount, so the verdict itself is not what this checks; --format json names every point)
    compared = gpubench("compare", "a.json", "b.json", "--format", "json")
    assert compared.returncode in (0, 1, 3), compared.stdout + compared.stderr
    assert sorted(c["variant"] for c in json.loads(compared.stdout)["changes"]) == ["numpy", "numpy"], compared.stdout
    itself = gpubench("compare", "a.json", "a.json")
    assert itself.returncode == 0 and "axpy numpy" in itself.stdout and "2 same" in itself.stdout, itself.stdout
    reported = gpubench("report", "a.json", "b.json", "-o", "r.html")
    assert reported.returncode == 0 and (work / "r.html").stat().st_size > 1000, reported.stderr
