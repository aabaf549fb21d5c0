"""On a GPU: Python variants (Triton, CuPy, PyTorch) verified at ragged shapes, held to the timed stream, and
isolated like CUDA kernels when they fault or hang; the API's measure on the GPU (needs a GPU, Triton, PyTorch)."""

import math
import re
import time
from pathlib import Path

import numpy as np

import pytest

from dataclasses import replace

from gpubench import api
from gpubench.specs import project
from gpubench.specs import files
from gpubench.backends.cuda.python_calls import UnseenWork
from gpubench.core.dtypes import DType
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.execution.tasks import PointTask, ShapeTask, verify
from gpubench.core.errors import Skip
from gpubench.measure.timing import Pace, TimingPolicy, measure
from gpubench.execution.worker import Worker, WorkerOptions

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# Ragged for every tile (each new shape costs the Triton examples an autotuning, so a few): a narrow GEMM, the
# lab's convolution at stride 2, a many-channel layer and a 5×5 filter at stride 2.
GEMMS = [GemmShape(1000, 1500, 777), GemmShape(33, 1, 7), GemmShape(3000, 4100, 68)]
CONVS = [conv_shape(777, 2), conv_shape(33, 1, batch=2, in_channels=64, out_channels=32),
         conv_shape(29, 2, batch=3, in_channels=3, out_channels=32, kernel=5, padding=2)]


CHECKED = (DType.FP32, DType.TF32, DType.BF16)  # fp16 takes bf16's path (16-bit tensor cores) in the examples


def example_cases():
    for name in ("triton", "cupy"):
        for v in project.load(EXAMPLES / name / "gpubench.toml").variants:
            for c in v.space.configs:
                for d in [d for d in v.scope.dtypes if d in CHECKED]:
                    for s in GEMMS if v.op == "gemm" else CONVS:
                        yield pytest.param(name, v, c, replace(s, dtype=d),
                                           id=f"{v.name}-{c.label}-{d}-{s.label}-s{getattr(s, 'stride', '')}")


@pytest.mark.parametrize("example,variant,config,shape", list(example_cases()))
def test_the_examples_pass_verification(cuda, example, variant, config, shape):
    pytest.importorskip("torch" if example == "triton" else "cupy")
    pytest.importorskip("triton" if example == "triton" else "cupy")
    inputs = cuda.inputs(shape, seed=3)
    ref = cuda.reference(shape, inputs)
    prepared = cuda.prepare(variant, config, shape, inputs)
    err = verify(cuda, prepared, ref, shape)
    tolerance = cuda.tolerance(variant, shape)
    assert math.isfinite(err) and err <= tolerance, f"{variant.name} {shape}: rel_err {err:.2e} over {tolerance:.1e}"
    assert prepared.details.first_call_ms > 0
    if example == "triton" and variant.name != "torch-matmul":
        assert set(prepared.details.reported["autotuned"]) >= {"num_warps", "num_stages"}
    prepared.release()


STREAMS = '''
import cupy as cp
import numpy as np
import torch

SPIN = cp.RawKernel(r"""
extern "C" __global__ void spin(long long ns)
{
    long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
""", "spin")
WAIT = np.int64(5_000_000)  # 5 ms on the GPU


def on_the_current_stream(A, B, C, M, N, K):
    cp.matmul(A, B, out=C)
    SPIN((1,), (1,), (WAIT,))


def cupy_side_stream(A, B, C, M, N, K):
    cp.matmul(A, B, out=C)
    with cp.cuda.Stream(non_blocking=True):
        SPIN((1,), (1,), (WAIT,))


def torch_side_stream(A, B, C, M, N, K):
    torch.matmul(A, B, out=C)
    with torch.cuda.stream(torch.cuda.Stream()):
        torch.cuda._sleep(20_000_000)  # cycles: about 10 ms at 2 GHz
'''


def variants(tmp_path, source: str, text: str, names, arrays=None):
    (tmp_path / source).write_text(text)
    tables = [{"name": n, "op": "gemm", "backend": "cuda", "source": source, "kernel": n,
               "args": ["A", "B", "C", "M", "N", "K"], **({"options": {"arrays": arrays[n]}} if arrays else {})}
              for n in names]
    return {v.name: v for v in files.parse_specs({"variant": tables}, "gpubench.toml", tmp_path)}


def test_work_on_another_stream_is_refused_not_timed_as_zero(cuda, tmp_path):
    pytest.importorskip("torch")
    mine = variants(tmp_path, "streams.py", STREAMS, ["on_the_current_stream", "cupy_side_stream", "torch_side_stream"],
                    {"on_the_current_stream": "cupy", "cupy_side_stream": "cupy", "torch_side_stream": "torch"})
    shape = GemmShape(256, 256, 256)
    inputs = cuda.inputs(shape, seed=1)
    seen = cuda.prepare(mine["on_the_current_stream"], mine["on_the_current_stream"].space.configs[0], shape, inputs)
    assert cuda.clock.time_ms(seen.run) >= 5.0  # the events bracket the spin
    for name in ("cupy_side_stream", "torch_side_stream"):
        with pytest.raises(UnseenWork, match=f"{name} kept the GPU busy .* but the timed stream saw"):
            cuda.prepare(mine[name], mine[name].space.configs[0], shape, inputs)


FAULTS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _store_far_away(c):
    tl.store(c + (1 << 40), 1.0)  # far outside any allocation: an illegal address, sticky for the context


@triton.jit
def _wait_forever(c, flag):
    seen = tl.load(flag)
    while seen == 0:  # nobody ever sets the flag
        seen = tl.load(flag, volatile=True)
    tl.store(c, 1.0)


def out_of_bounds(A, B, C, M, N, K):
    _store_far_away[(1,)](C)


def forever(A, B, C, M, N, K):
    _wait_forever[(1,)](C, torch.zeros(1, dtype=torch.int32, device=C.device))


def good(A, B, C, M, N, K):
    torch.matmul(A, B, out=C)
'''


def test_a_triton_kernel_that_faults_or_hangs_costs_its_point_only(tmp_path):
    pytest.importorskip("triton")
    mine = variants(tmp_path, "faults.py", FAULTS, ["out_of_bounds", "forever", "good"],
                    {n: "torch" for n in ("out_of_bounds", "forever", "good")})
    order = [mine["good"], mine["out_of_bounds"], mine["good"], mine["forever"], mine["good"]]
    policy = TimingPolicy(warmup=1, reps=5, min_reps=5, budget_s=0.0)
    task = ShapeTask("t", GemmShape(256, 256, 256), 0,
                     tuple(PointTask(i, v, v.space.configs[0], policy) for i, v in enumerate(order)))
    got = []
    with Worker(WorkerOptions("cuda", timeout_s=30)) as worker:
        worker.run(task, got.append)
        kinds = [i.kind for i in worker.incidents]
    assert [(p.variant, p.status) for p in got] == [("good", "ok"), ("out_of_bounds", "error"), ("good", "ok"),
                                                    ("forever", "timeout"), ("good", "ok")]
    assert "illegal" in got[1].reason.lower(), got[1].reason
    assert kinds[-1] == "timeout" and len(kinds) == 2


BROKEN = '''
import triton
import triton.language as tl


@triton.jit
def _never_defined(c):
    tl.store(c, undefined_here)


def broken(A, B, C, M, N, K):
    _never_defined[(1,)](C)
'''


def test_a_triton_kernel_that_does_not_compile_stops_the_run_before_any_point(tmp_path, monkeypatch):
    pytest.importorskip("triton")
    from click.testing import CliRunner

    from gpubench.cli import cli

    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "gpubench.toml").write_text('[[variant]]\nname = "broken"\nop = "gemm"\nbackend = "cuda"\n'
                                            'source = "broken.py"\nkernel = "broken"\n'
                                            'args = ["A", "B", "C", "M", "N", "K"]\noptions = { arrays = "torch" }\n')
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["gemm", "--variants", "cublas,broken", "--sizes", "256", "-o", "r.json"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert re.match(rf"gpubench: error: {re.escape(str(tmp_path / 'broken.py'))}: broken does not compile: \w+ at "
                    r"\d+:\d+: ", r.output), r.output
    assert "undefined_here" in r.output and not (tmp_path / "r.json").exists()


def busy(us: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < us / 1e6:
        pass


@pytest.mark.parametrize("launch_us", [0, 300])
def test_a_call_is_timed_without_the_hosts_time_to_launch_it(cuda, launch_us):
    """A 1 ms wait kernel behind a launcher that takes the host 300 µs (a slow Python launcher) reads 1 ms, not the
    launch too: the clock's wait covers the launch (before, a flushed call read about 1.2 ms)."""
    spin = cuda.probe("spin")

    def run():
        busy(launch_us)
        spin(np.int64(1_000_000), block=(1, 1, 1), grid=(1, 1))

    run()
    cuda.clock.sync()
    samples = []
    for _ in range(6):
        cuda.clock.flush()
        samples.append(cuda.clock.time_ms(run))
    assert all(0.999 <= s < 1.02 for s in samples), samples


def test_a_sustained_stream_keeps_the_host_out_and_gives_up_where_it_cannot_keep_ahead(cuda):
    """At the sustained pace a 1 ms wait kernel behind a 300 µs launcher reads 1 ms: the stream is kept ahead of
    the GPU, so no launch falls inside an interval. A 10 µs kernel behind the same launcher cannot be kept ahead
    (the GPU runs it and its flush faster than the host queues the next): skipped, never timed with the host in."""
    spin = cuda.probe("spin")
    policy = TimingPolicy(warmup=1, reps=30, min_reps=5, budget_s=0.3, pace=Pace.SUSTAINED, settle_s=0.3)

    def launched(kernel_ns):
        def run():
            busy(300)
            spin(np.int64(kernel_ns), block=(1, 1, 1), grid=(1, 1))

        return run

    t = measure(launched(1_000_000), cuda.clock, policy, cuda.telemetry)
    assert t.settled_s >= 0.3 and len(t.samples_ms) >= 5 and t.sm_mhz
    assert all(0.999 <= s < 1.02 for s in t.samples_ms), t.samples_ms
    with pytest.raises(Skip, match="ran out of work while the host queued"):
        measure(launched(10_000), cuda.clock, policy)


def test_measure_at_the_sustained_pace_on_the_gpu():
    torch = pytest.importorskip("torch")

    def mm(A, B, C, M, N, K):
        torch.matmul(A, B, out=C)

    m = api.measure(mm, api.gemm(4096, dtype="bf16"), arrays="torch", pace="sustained", settle=0.5)
    assert m.ok and m.point.pace == Pace.SUSTAINED and m.point.details.settled_s >= 0.5
    assert m.point.details.flushed and m.telemetry["sm_mhz"] > 0 and len(m.samples_ms) >= 5


def test_measure_on_the_gpu_verifies_times_and_reads_the_hardware():
    torch = pytest.importorskip("torch")

    def mm(A, B, C, M, N, K):
        torch.matmul(A, B, out=C)

    m = api.measure(mm, api.gemm(2048), arrays="torch")
    assert m.ok and m.rel_err < 1e-4 and m.median_ms > 0 and m.point.details.flushed and m.first_call_ms > 0
    assert m.telemetry["sm_mhz"] > 0 and m.joules_per_call > 0
    wrong = api.measure(lambda A, B, C, M, N, K: C.fill_(1.0), api.gemm(512), arrays="torch")
    assert not wrong.ok
