import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from gpubench.core.errors import GpubenchError


# The property batteries' sizes (tests/hostile.py `examples`): a share of each by default, every example under
# `--hypothesis-profile=full` (.ci/run runs both). The profile also carries the batteries' common settings.
settings.register_profile("full", deadline=None, derandomize=True, database=None)


def shared_dir(tmp_path_factory) -> Path:
    """A directory of this session that every xdist worker sees (its workers' base directories sit side by side in
    the session's own); the session's base directory without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def session_home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory) -> Path:
    """The session's one cache directory (GPUBENCH_CACHE's kind), shared by every worker: a kernel compiled by one
    test is a cache hit for every other (nvcc.compile_cubin keys by hash and replaces files atomically)."""
    path = shared_dir(tmp_path_factory) / "cache" / "gpubench"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(autouse=True)
def isolated(session_home, kernel_cache, tmp_path_factory, monkeypatch):
    """Every test runs in its own empty directory, with config directories of the session's own, so that
    nothing a test writes (a default results/ file, a tuned configuration) lands in the repository or in the
    user's home, and no gpubench.toml above the checkout leaks in. Compiled kernels are shared by the session's
    workers (or go where GPUBENCH_CACHE already points: the GPU machine carries a prebuilt cache)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(kernel_cache.parent))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(session_home / "config"))
    for name in ("GPUBENCH_TUNED", "GPUBENCH_CONFIG", "GPUBENCH_BACKEND"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def gpu_hang_guard(request):
    """A test with the gpu marker may not hang its worker: tests/gpu_hang_guard.py."""
    from gpu_hang_guard import guard

    yield from guard(request)


@pytest.fixture(scope="session")
def cuda():
    """The CUDA backend, or a skip where this machine has no GPU stack (tests using it carry the gpu marker)."""
    from gpubench.backends import open_backend

    try:
        return open_backend("cuda")
    except GpubenchError as e:
        pytest.skip(f"no GPU here: {e}")


@pytest.fixture(scope="module")
def data(cuda):
    """GPU tests' inputs and references, drawn once per shape in each module (fresh random data, seeded per shape)."""
    cache = {}

    def get(shape):
        if shape not in cache:
            inputs = cuda.inputs(shape, seed=len(cache) + 11)
            cache[shape] = (inputs, cuda.reference(shape, inputs))
        return cache[shape]

    return get


@pytest.fixture
def cpu():
    from gpubench.backends.cpu import CpuBackend

    return CpuBackend()


def synthetic_run(device="NVIDIA H200", samples=40, noise=0.01, seed=0, scale=None, clocks=None):
    """A run with gemm and conv points whose raw samples are drawn around fixed medians (no timing involved).

    scale: {(variant, size): factor} multiplies those points' samples (a regression or an improvement).
    clocks: an SM clock (MHz) for every point, and the hardware record a GPU run has: telemetry, the empty-kernel
    floor and the roofline's ceilings.
    """
    import random

    from gpubench.ops.gemm import GemmShape
    from gpubench.ops.conv import conv_shape
    from dataclasses import replace

    from gpubench.results import Details, Point, Run

    rng = random.Random(seed)
    scale = scale or {}
    points = []
    for variant, base in (("tiled", 4.0), ("cublas", 2.5)):
        for size in (1024, 2048):
            shape = GemmShape(size, size, size)
            ms = base * (size / 1024) ** 3 * scale.get((variant, size), 1.0)
            xs = [ms * (1 + rng.gauss(0, noise)) for _ in range(samples)]
            points.append(Point.measured(shape, variant, "-" if variant == "cublas" else "128x128x8/8x8",
                                         samples_ms=xs, rel_err=1e-6, tolerance=1e-4))
    for variant, base in (("sliding", 1.5), ("cudnn", 3.0)):
        shape = conv_shape(4096, 1)
        ms = base * scale.get((variant, 4096), 1.0)
        xs = [ms * (1 + rng.gauss(0, noise)) for _ in range(samples)]
        points.append(Point.measured(shape, variant, "16" if variant == "sliding" else "-", samples_ms=xs,
                                     rel_err=1e-7, tolerance=1e-4,
                                     details=Details(engine="eng0") if variant == "cudnn" else Details()))
    env = {"device": {"name": device, "compute_capability": "9.0", "driver": "580.159.04"},
           "software": {"cupy": "14.2.0", "cuda_runtime": "13.2"}}
    variants = [{"op": op, "name": name, "baseline": name in ("cublas", "cudnn"), "sha256": "ab" * 32,
                 "source": None if name in ("cublas", "cudnn") else f"/src/{name}.cu"}
                for op, name in (("gemm", "tiled"), ("gemm", "cublas"), ("conv", "sliding"), ("conv", "cudnn"))]
    if clocks:
        env["device"].update(floor_ms=0.004, ceilings={"ffma_gflops": 60000, "tf32_gflops": 400000, "copy_gbps": 3000,
                                                       "l2_read_gbps": 9000},
                             telemetry={"clocks_locked": False, "sm_clock_idle_mhz": 345, "sm_clock_max_mhz": 1980})
        points = [replace(p, telemetry={"sm_mhz": clocks, "sm_mhz_min": clocks, "mem_mhz": 2619, "power_w": 400.0, "throttled": 0,
                           "discarded": 0, "reasons": [], "joules_per_call": 0.4 * p.median_ms / 1e3,
                           "gflops_per_w": p.flops / (0.4 * p.median_ms) / 1e6}) for p in points]
    return Run(backend="cuda", environment=env, settings={}, command=["gpubench", "test"], points=points,
               status="complete", created="2026-11-22T00:00:00+00:00", variants=variants)


@pytest.fixture
def make_run():
    return synthetic_run


@pytest.fixture
def run_file(tmp_path):
    """Write a run to a JSON file and return its path."""
    from gpubench import results

    def write(run, name="run.json"):
        return str(results.save(run, tmp_path / name))

    return write


# --- real gpubench processes (the signal and concurrency tests) ----------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SIZES = [int(s) for s in "40,41,42,43,44,45,46,47,48,49,50,51".split(",")]
SLOW = """
import os, time
import numpy as np

def slow(A, B, C, M, N, K):
    time.sleep(0.05)  # each point takes a while: the signal lands mid-sweep, inside a point
    if M >= int(os.environ.get("HANG_FROM", 10**9)):
        time.sleep(600)
    np.matmul(A, B, out=C)
"""


@pytest.fixture
def slow_project(tmp_path):
    """A project whose one variant, `slow`, takes a while at every point (`start_sweep` runs it)."""
    (tmp_path / "k.py").write_text(SLOW)
    (tmp_path / "gpubench.toml").write_text('[[variant]]\nname = "slow"\nop = "gemm"\nsource = "k.py"\n'
                                            'kernel = "slow"\nargs = ["A", "B", "C", "M", "N", "K"]\n')
    return tmp_path


def start_sweep(project: Path, *extra: str, hang_from: int | None = None, sizes=SIZES) -> subprocess.Popen:
    """`gpubench gemm` in a process group of its own, as a shell starts a job (its points from size `hang_from`
    on never end)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if hang_from is not None:
        env["HANG_FROM"] = str(hang_from)
    return subprocess.Popen([sys.executable, "-m", "gpubench", "gemm", "--backend", "cpu", "--variants", "slow",
                             "--sizes", ",".join(map(str, sizes)), "--warmup", "0", "--reps", "5", "-o", "r.json",
                             *extra], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def saved_points(path: Path) -> int:
    from gpubench import results

    try:
        return len(results.load(path).points)
    except Exception:  # noqa: BLE001 - not there yet
        return 0


def survivors(processes: list) -> list:
    """The processes still running after a grace of 15 s (a zombie has ended)."""
    import psutil

    gone, alive = psutil.wait_procs(processes, timeout=15)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests on the GPU run one after another on one xdist worker (--dist loadgroup), as they would alone: two timing
    the same GPU at once would each measure the other. Without a GPU they are skipped there, cheaply."""
    for item in items:
        if item.get_closest_marker("gpu") or "cuda" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("gpu"))
