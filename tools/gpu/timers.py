"""The same kernels timed by gpubench, by NVIDIA's nvbench (the cuda-bench package) and by triton's do_bench.

    python tools/gpu/timers.py nvbench DIR     # one process per tool: nvbench runs its benchmarks once per process
    python tools/gpu/timers.py dobench DIR
    python tools/gpu/timers.py table DIR gpubench-gemm.json gpubench-conv.json > timers.md

Problems: cuBLAS SGEMM at 512, 2048 and 4096 (through cupy.matmul for the other tools: the same cuBLAS
kernel; gpubench calls cublasGemmEx itself), gpubench's `tiled` GEMM at 2048 (128x128x8/8x8) and the lab's
`sliding` convolution at 4096², stride 1, block 16 (the same cubins gpubench compiles, launched through
CuPy on each tool's own stream). Every tool flushes L2 before each timed call (nvbench: cold measurement;
do_bench: its cache flush); all report medians here.
"""

import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from gpubench.specs import catalog  # noqa: E402
from gpubench.execution import nvcc
from gpubench.ops.conv import conv_shape  # noqa: E402
from gpubench.ops.gemm import GemmShape

CATALOG = catalog.Catalog(catalog.builtin())


def problems():
    """name -> (setup() -> launch(stream)), each allocating its inputs once."""
    arch = "sm_" + cp.cuda.Device().compute_capability  # "90" on Hopper
    out = {}
    for n in (512, 2048, 4096):
        def cublas(n=n):
            a, b = cp.random.rand(n, n, dtype=cp.float32), cp.random.rand(n, n, dtype=cp.float32)
            c = cp.empty((n, n), cp.float32)
            return lambda: cp.matmul(a, b, out=c)
        out[f"cublas-{n}"] = cublas
    tiled = CATALOG.get("gemm", "cuda", "tiled")
    sliding = CATALOG.get("conv", "cuda", "sliding")

    def kernel(variant, config, shape, arrays):
        module = cp.RawModule(path=str(nvcc.compile_cubin(variant.code.program.source, arch, config.values)))
        fn = module.get_function(variant.code.program.kernel)
        launch = variant.code.launch_for(shape.dims(), config)
        dims = shape.dims()
        args = tuple(arrays[a] if a in arrays else np.int32(dims[a]) for a in variant.code.program.args)
        if launch.shared_bytes:
            fn.max_dynamic_shared_size_bytes = launch.shared_bytes
        return lambda: fn(launch.grid, launch.block, args, shared_mem=launch.shared_bytes)

    def tiled_2048():
        s = GemmShape(2048, 2048, 2048)
        arrays = {"A": cp.random.rand(2048, 2048, dtype=cp.float32), "B": cp.random.rand(2048, 2048, dtype=cp.float32),
                  "C": cp.empty((2048, 2048), cp.float32)}
        return kernel(tiled, tiled.space.configs[0], s, arrays)

    def sliding_4096():
        s = conv_shape(4096, 1)
        arrays = {"x": cp.random.rand(1, 3, 4096, 4096, dtype=cp.float32), "w": cp.random.rand(1, 3, 3, 3, dtype=cp.float32),
                  "y": cp.empty((1, 1, s.out_height, s.out_width), cp.float32)}
        return kernel(sliding, sliding.space.configs_for((16,))[0], s, arrays)

    out["tiled-2048"] = tiled_2048
    out["sliding-4096-s1"] = sliding_4096
    return out


def nvbench(outdir: Path) -> None:
    import cuda.bench as bench

    for name, setup in problems().items():
        def bench_fn(state, setup=setup):
            stream = cp.cuda.Stream.from_external(state.get_stream())
            with stream:
                run = setup()
            stream.synchronize()

            def launcher(launch):
                with cp.cuda.Stream.from_external(launch.get_stream()):
                    run()

            state.exec(launcher, batched=False)  # cold: L2 flushed before every sample

        bench_fn.__name__ = name.replace("-", "_")
        bench.register(bench_fn)
    bench.run_all_benchmarks([sys.argv[0], "--json", str(outdir / "nvbench.json"), "-q"])


def dobench(outdir: Path) -> None:
    import torch
    from triton.testing import do_bench

    results = {}
    for name, setup in problems().items():
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)  # do_bench times on torch's stream
        with stream:
            run = setup()
            results[name] = do_bench(run, warmup=50, rep=500, return_mode="median")  # ms, L2 flushed by default
    (outdir / "dobench.json").write_text(json.dumps(results, indent=1))


def table(outdir: Path, *gpubench_files: str) -> None:
    from cuda.bench.results import BenchmarkResult

    nv = BenchmarkResult.from_json(str(outdir / "nvbench.json"))
    nvb = {name.replace("_", "-"): nv[name][0].summaries for name in nv}
    do = json.loads((outdir / "dobench.json").read_text())
    ours = {}
    from gpubench import results

    for f in gpubench_files:
        for p in results.load(f).points:  # any schema version, as typed points
            if p.status != results.Status.OK:
                continue
            median = float(np.median(p.samples_ms))
            if p.variant == "cublas":
                ours[f"cublas-{p.problem.m}"] = median
            elif p.variant == "tiled" and p.config == "128x128x8/8x8" and p.problem.m == 2048:
                ours["tiled-2048"] = median
            elif p.variant == "sliding" and p.config == "16" and p.problem.height == 4096:
                ours["sliding-4096-s1"] = median
    print("| kernel | gpubench median | nvbench cold median (mean) | do_bench median | gpubench / nvbench | "
          "gpubench / do_bench |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in problems():
        s = nvb[name]
        nv_med, nv_mean = s["nv/cold/time/gpu/median"].value * 1e3, s["nv/cold/time/gpu/mean"].value * 1e3
        g = ours.get(name)
        print(f"| {name} | {g:.4f} ms | {nv_med:.4f} ms ({nv_mean:.4f}) | {do[name]:.4f} ms | "
              f"{g / nv_med:.3f} | {g / do[name]:.3f} |")


if __name__ == "__main__":
    mode, outdir = sys.argv[1], Path(sys.argv[2])
    {"nvbench": nvbench, "dobench": dobench}.get(mode, lambda d: table(d, *sys.argv[3:]))(outdir)
