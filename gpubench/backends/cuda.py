"""The CUDA backend: hand-written kernels through PyCUDA, cuBLAS through CuPy, cuDNN through its frontend.

PyCUDA works on the device's primary context (pycuda.autoprimaryctx), the one CuPy's runtime calls use, so
both share one address space: inputs are CuPy arrays and kernels get their raw pointers. Every launch, event
and library call goes to the legacy default stream, so the timer's events bracket exactly the work timed.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections import deque

import numpy as np

from gpubench import nvcc, registry, telemetry
from gpubench.backends import ArrayBackend, Prepared, call_arrays, kernel_arguments, tma
from gpubench.errors import GpubenchError, Skip
from gpubench.problems import ConvShape, GemmShape
from gpubench.results import Details
from gpubench.timing import TimingPolicy, measure, summarize
from gpubench.variant import SMS, TF32_TOL, Launch

MAX_GRID_YZ = 65535
SPIN_NS = 50_000  # cover for the host's launch latency when L2 is not flushed (see probes.cu)
# cuDNN's plan search (not the point's timing): each plan timed as points are, in queued batches after a flush.
PLAN_SEARCH = TimingPolicy(warmup=1, reps=20, min_reps=5, budget_s=0.02)
PLAN_TIE = 0.03  # plans within 3% of the fastest are ties, settled by cuDNN's own ranking (stable across runs)


def import_gpu_stack():
    """(pycuda.driver, cupy) on the primary context, or one line naming what is missing."""
    try:
        import pycuda.driver as drv
    except ImportError as e:
        if "libcuda" in str(e):
            raise GpubenchError("NVIDIA driver not found (libcuda cannot be loaded): run on a machine with an "
                                "NVIDIA GPU, or use --backend cpu") from None
        raise GpubenchError("PyCUDA is not installed: pip install 'gpubench[gpu]', or use --backend cpu") from None
    try:
        import cupy
    except ImportError:
        raise GpubenchError("CuPy is not installed: pip install cupy-cuda13x (cupy-cuda12x on CUDA 12), or use "
                            "--backend cpu") from None
    try:
        drv.init()
        count = drv.Device.count()
    except drv.Error as e:
        raise GpubenchError(f"no usable NVIDIA driver or GPU (cuInit: {e}): use --backend cpu") from None
    if count == 0:
        raise GpubenchError("no CUDA device found: use --backend cpu")
    import pycuda.autoprimaryctx  # noqa: F401  (retains device 0's primary context, CuPy's too)

    return drv, cupy


def _ptr(array) -> np.uintp:
    return np.uintp(array.data.ptr)


class CudaClock:
    """CUDA events on the default stream around each call; L2 flushed by a memset of twice its size."""

    def __init__(self, cp, l2_bytes: int, spin):
        self.cp = cp
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()
        self.scratch = cp.empty(max(2 * l2_bytes, 64 << 20), dtype=cp.uint8)
        self.value = 0
        self.spin = spin  # spin(nanoseconds): a kernel that waits on the GPU
        self.flushed = False
        self.events: list = []
        self.enqueue_us: deque[float] = deque([30.0], maxlen=8)  # the host's time to queue one flush + call

    def sync(self) -> None:
        self.cp.cuda.Stream.null.synchronize()

    def flush(self) -> None:
        self.value ^= 0x5A  # a different byte each time, so no write is ever a no-op
        self.cp.cuda.runtime.memsetAsync(self.scratch.data.ptr, self.value, self.scratch.nbytes, 0)
        self.flushed = True

    def time_ms(self, run) -> float:
        if not self.flushed:
            self.spin(SPIN_NS)
        self.flushed = False
        self.start.record()
        run()
        self.end.record()
        self.end.synchronize()
        return self.cp.cuda.get_elapsed_time(self.start, self.end)

    def time_batch_ms(self, run, n: int, flush: bool) -> list[float]:
        """n calls queued behind one wait kernel, each between its own pair of events (and after its own
        flush): the GPU never waits for the host inside an interval, so short calls are timed without the
        host's launch jitter. A batch the host was too slow to queue in time is timed again, with a longer wait."""
        while len(self.events) < 2 * n:
            self.events.append(self.cp.cuda.Event())
        wait_ns = int(1.5 * statistics.median(self.enqueue_us) * 1000 * n) + 20_000  # from the last few batches
        while True:
            self.spin(wait_ns)
            t0 = time.perf_counter()
            for i in range(n):
                if flush:
                    self.flush()
                self.events[2 * i].record()
                run()
                self.events[2 * i + 1].record()
            queued_ns = (time.perf_counter() - t0) * 1e9
            self.events[2 * n - 1].synchronize()
            self.enqueue_us.append(queued_ns / n / 1000)
            self.flushed = False
            if queued_ns < wait_ns:
                return [self.cp.cuda.get_elapsed_time(self.events[2 * i], self.events[2 * i + 1]) for i in range(n)]
            wait_ns = 2 * int(queued_ns) + 20_000  # the host fell behind (a hiccup): again, with room to spare

    def run_many(self, run, n: int, flush: bool) -> None:
        """n calls back to back (each after a flush where flushing), then wait: the energy window's work."""
        for _ in range(n):
            if flush:
                self.flush()
            run()
        self.sync()


class CudaBackend(ArrayBackend):
    name = "cuda"
    flushes = True
    memory_name = "device memory"

    def __init__(self, tf32: bool = False):
        self.drv, self.cp = import_gpu_stack()
        # NVML first, before we put any load on the GPU: its idle clock tells whether clocks are locked.
        self.telemetry = telemetry.open_telemetry(self.drv.Context.get_device().pci_bus_id())
        self.xp = self.cp
        self.out_of_memory = (self.cp.cuda.memory.OutOfMemoryError, MemoryError)
        self.tf32 = tf32
        self.device = self.drv.Context.get_device()
        major, minor = self.device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        attrs = self.drv.device_attribute
        self.l2_bytes = self.device.get_attribute(attrs.L2_CACHE_SIZE)
        self.max_threads = self.device.get_attribute(attrs.MAX_THREADS_PER_BLOCK)
        self.smem_optin = self.device.get_attribute(attrs.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.sms = self.device.get_attribute(attrs.MULTIPROCESSOR_COUNT)
        self.device_name = self.device.name()
        self._modules: dict = {}
        self._cudnn: dict = {}
        spin = self.probe("spin")
        self.clock = CudaClock(self.cp, self.l2_bytes, lambda ns: spin(np.int64(ns), block=(1, 1, 1), grid=(1, 1)))

    # --- environment and limits -------------------------------------------------------------------------------

    def describe(self) -> dict:
        """What the coordinator needs before it plans: the device, its limits, the libraries here."""
        from gpubench.backends import cudnn_conv

        return {"device": self.device_name, "arch": self.arch, "max_threads": self.max_threads,
                "smem_optin": self.smem_optin, "sms": self.sms, "libraries": {"cudnn": cudnn_conv.cudnn_version()}}

    def environment(self) -> dict:
        from gpubench.backends import cudnn_conv

        a, d = self.drv.device_attribute, self.device
        major, minor = d.compute_capability()
        free, total = self.cp.cuda.runtime.memGetInfo()
        rt = self.cp.cuda.runtime.runtimeGetVersion()
        drv_ver = self.drv.get_driver_version()
        import cupy
        import pycuda

        ceilings = self.ceilings()
        self.collect()
        return {
            "device": {
                "name": d.name(), "kind": "cuda", "compute_capability": f"{major}.{minor}",
                "pci_bus_id": d.pci_bus_id(),
                "sm_count": self.sms,
                "sm_clock_max_mhz": d.get_attribute(a.CLOCK_RATE) // 1000,
                "memory_clock_max_mhz": d.get_attribute(a.MEMORY_CLOCK_RATE) // 1000,
                "memory_bus_bits": d.get_attribute(a.GLOBAL_MEMORY_BUS_WIDTH),
                "memory_total_gib": round(total / 2**30, 1), "memory_free_gib": round(free / 2**30, 1),
                "l2_bytes": self.l2_bytes,
                "smem_per_block_optin": d.get_attribute(a.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
                **_nvidia_smi(d.pci_bus_id()),
                "telemetry": self.telemetry.describe(),
                "floor_ms": self.floor_ms(),
                "ceilings": ceilings,
                "copy_gbps": ceilings["copy_gbps"],
            },
            "software": {
                "cuda_driver_api": f"{drv_ver // 1000}.{drv_ver % 1000 // 10}",
                "cuda_runtime": f"{rt // 1000}.{rt % 1000 // 10}",
                "nvcc": nvcc.nvcc_version(nvcc.find_nvcc()) if nvcc.find_nvcc() else None,
                "pycuda": pycuda.VERSION_TEXT, "cupy": cupy.__version__, "cudnn": cudnn_conv.cudnn_version(),
                "numpy": np.__version__,
            },
        }

    def probe(self, symbol: str):
        return self.function(registry.kernels_dir() / "probes.cu", symbol, {})

    def floor_ms(self) -> float:
        """The median of an empty kernel timed as every point is (flush, events, queued batches)."""
        empty = self.probe("empty")
        timing = measure(lambda: empty(block=(1, 1, 1), grid=(1, 1)), self.clock,
                         TimingPolicy(warmup=3, reps=200, min_reps=50, budget_s=0.3))
        return summarize(timing.samples_ms).median

    def ceilings(self) -> dict:
        """The roofline's ceilings, measured here: FP32 FFMA peak, TF32 through cuBLAS, DRAM copy and L2 read."""
        sms = self.sms
        once = TimingPolicy(warmup=2, reps=10, min_reps=5, budget_s=0.3, flush=False)
        sink = self.cp.empty(sms * 8 * 256, dtype=self.cp.float32)
        ffma, iterations = self.probe("ffma_peak"), 4096
        ms = summarize(measure(lambda: ffma(_ptr(sink), np.int32(iterations), np.float32(0.999), np.float32(1e-3),
                                             block=(256, 1, 1), grid=(sms * 8, 1)), self.clock, once).samples_ms).median
        ffma_gflops = 2 * 8 * 16 * iterations * sms * 8 * 256 / ms / 1e6
        l2_read, chunk = self.probe("l2_read"), self.l2_bytes // 4 // 16 * 16
        buf = self.cp.ones(chunk // 4, dtype=self.cp.float32)
        passes = 64
        ms = summarize(measure(lambda: l2_read(_ptr(buf), np.int64(chunk // 16), np.int32(passes), _ptr(sink),
                                               block=(256, 1, 1), grid=(sms * 8, 1)), self.clock, once).samples_ms).median
        out = {"ffma_gflops": round(ffma_gflops), "l2_read_gbps": round(chunk * passes / ms / 1e6),
               "copy_gbps": round(self.copy_bandwidth())}
        n = 8192
        a_, b_ = self.cp.ones((n, n), self.cp.float32), self.cp.ones((n, n), self.cp.float32)
        c_ = self.cp.empty((n, n), self.cp.float32)
        saved, self.tf32 = self.tf32, True  # the TF32 ceiling is cuBLAS's TF32 product, whatever this run allows
        try:
            run = self._cublas_gemm(n, n, n, a_, 0, b_, 0, c_, 0, 1)
        finally:
            self.tf32 = saved
        ms = summarize(measure(run, self.clock, once).samples_ms).median
        out["tf32_gflops"] = round(2 * n**3 / ms / 1e6)
        return out  # its buffers go back to CuPy's pool as it returns

    def energy(self, run, flush: bool, flops: float) -> dict | None:
        """Joules per call, from NVML's energy counter over a window of calls made back to back (no flush: a flush
        costs energy of its own, as much as a small kernel's, and the difference of two such windows is noise)."""
        window = telemetry.energy_window(lambda n: self.clock.run_many(run, n, False), self.telemetry)
        if window is None:
            return None
        joules = window["joules_per_call"]
        return {"joules_per_call": joules, "gflops_per_w": flops / joules / 1e9, "window_power_w": window["power_w"],
                "energy_window_calls": window["calls"]}

    def copy_bandwidth(self, nbytes: int = 1 << 30) -> float:
        """Device-to-device copy, GB/s counting bytes read plus written: the memory-bound ceiling."""
        cp = self.cp
        src, dst = cp.empty(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
        samples = measure(lambda: cp.copyto(dst, src), self.clock, TimingPolicy(warmup=2, reps=10, budget_s=0.5))
        return 2 * nbytes / summarize(samples.samples_ms).median / 1e6

    def tolerance(self, variant) -> float:
        uses_library = variant.runner in ("cublas", "cudnn") or variant.options.get("gemm") == "cublas"
        return TF32_TOL if self.tf32 and uses_library else variant.tolerance

    def collect(self) -> None:
        self.cp.get_default_memory_pool().free_all_blocks()

    def free_text(self) -> str:
        return f" ({self.cp.cuda.runtime.memGetInfo()[0] / 2**30:.1f} GiB free)"

    def healthy(self) -> bool:
        """False once a kernel has faulted: CUDA's errors of that kind are sticky for the whole context."""
        try:
            probe = self.cp.zeros(1, dtype=self.cp.float32)
            probe += 1
            self.cp.cuda.runtime.deviceSynchronize()
            return float(probe[0]) == 1.0
        except Exception:
            return False

    # --- kernels ----------------------------------------------------------------------------------------------

    def function(self, source, symbol: str, params: dict, arch: str | None = None, includes=()):
        arch = arch or self.arch
        if not arch.startswith(self.arch):
            raise Skip(f"needs {arch}; this GPU is {self.arch}")
        key = (str(source), tuple(sorted(params.items())), arch)
        if key not in self._modules:
            cubin = nvcc.compile_cubin(source, arch, params, includes=includes)
            self._modules[key] = self.drv.module_from_file(str(cubin))
        return self._modules[key].get_function(symbol)

    def kernel(self, variant, params: dict, symbol: str | None = None):
        return self.function(variant.source, symbol or variant.kernel, params, variant.arch, variant.includes)

    def launcher(self, fn, launch: Launch, fmt: str, args: tuple):
        fa = self.drv.function_attribute
        limit = fn.get_attribute(fa.MAX_THREADS_PER_BLOCK)
        if launch.threads > limit:
            raise Skip(f"{launch.threads} threads per block, but this kernel can launch at most {limit} here")
        if max(launch.grid[1:]) > MAX_GRID_YZ:
            raise Skip(f"grid {launch.grid} exceeds the y/z limit of {MAX_GRID_YZ} blocks")
        if launch.shared_bytes > self.smem_optin:
            raise Skip(f"needs {launch.shared_bytes} bytes of shared memory; this GPU allows {self.smem_optin}")
        if launch.shared_bytes > 48 * 1024:
            fn.set_attribute(fa.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes)
        fn.prepare(fmt)
        grid, block, smem = launch.grid, launch.block, launch.shared_bytes
        return lambda: fn.prepared_call(grid, block, *args, shared_size=smem)

    def prepare(self, variant, config, shape, inputs) -> Prepared:
        out = self.output(shape)
        if variant.runner == "kernel":
            return self._kernels(variant, config, shape, inputs, out)
        if variant.runner == "cublas":
            run = self._cublas_gemm(shape.m, shape.n, shape.k, inputs["A"], 0, inputs["B"], 0, out, 0, 1)
            return Prepared(run, out, details=self._library_details())
        if variant.runner == "im2col":
            return self._im2col(variant, config, shape, inputs, out)
        if variant.runner == "cudnn":
            return self._cudnn_run(variant, shape, inputs, out)
        raise GpubenchError(f"the cuda backend cannot run variant {variant.name} (runner {variant.runner!r})")

    def _kernels(self, variant, config, shape, inputs, out) -> Prepared:
        """A kernel variant's call: its `before` steps, then its main kernel, sharing the workspace arrays. Each
        step before the main one is also timed on its own (recorded as <kernel>_ms)."""
        dims = shape.dims()
        scratch = {name: self.fits(lambda n=n: self.cp.empty(n, dtype=self.cp.float32),
                                   f"workspace {name} ({4 * n / 2**30:.2f} GiB)")
                   for name, n in variant.workspace_sizes(dims, config).items()}
        # TMA descriptors travel like arrays: 128 bytes each in device memory, passed by pointer.
        arrays = call_arrays(shape, inputs, out, scratch)
        for m in variant.tensor_maps:
            encoded = tma.encode(m.name, int(arrays[m.array].data.ptr), *m.resolve({**dims, **config.values}),
                                 m.swizzle)
            scratch[m.name] = self.cp.asarray(np.frombuffer(encoded, dtype=np.uint8))
        launches = []
        for step in variant.steps():
            fmt, args = kernel_arguments(step.args, shape, inputs, out, pointer=_ptr, scratch=scratch)
            fn = self.kernel(variant, config.values, step.kernel)
            launches.append(self.launcher(fn, step.launch_for({**dims, SMS: self.sms}, config), fmt, args))
        details = Details(tf32=True) if variant.tf32 else Details()
        parts = {step.kernel: launch for step, launch in zip(variant.before, launches)}

        def run():
            for launch in launches:
                launch()

        # The launches hold raw pointers: the workspace arrays live until the point releases them.
        return Prepared(launches[0] if len(launches) == 1 else run, out, parts=parts, details=details,
                        release=scratch.clear)

    # --- libraries --------------------------------------------------------------------------------------------

    def _library_details(self) -> Details:
        return Details(tf32=self.tf32)

    def _cublas_gemm(self, m, n, k, a, stride_a, b, stride_b, c, stride_c, batch):
        """Row-major C[m,n] = A[m,k]·B[k,n] (batched by strides) as cuBLAS's column-major C^T = B^T·A^T."""
        from cupy_backends.cuda.libs import cublas

        handle = self.cp.cuda.device.get_cublas_handle()
        one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
        compute = cublas.CUBLAS_COMPUTE_32F_FAST_TF32 if self.tf32 else cublas.CUBLAS_COMPUTE_32F
        f32, op_n = 0, cublas.CUBLAS_OP_N  # CUDA_R_32F = 0

        def run():
            cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
            cublas.gemmStridedBatchedEx(
                handle, op_n, op_n, n, m, k, one.ctypes.data, b.data.ptr, f32, n, stride_b, a.data.ptr, f32, k,
                stride_a, zero.ctypes.data, c.data.ptr, f32, n, stride_c, batch, compute, cublas.CUBLAS_GEMM_DEFAULT)

        return run

    def _im2col(self, variant, config, shape: ConvShape, inputs, out) -> Prepared:
        crs, pixels, n = shape.gemm_k, shape.out_pixels, shape.batch
        cols = self.fits(lambda: self.cp.empty((n, crs, pixels), dtype=self.cp.float32),
                         f"the column matrix ({4 * n * crs * pixels / 2**30:.1f} GiB)")
        # The unfold kernel's launch: x over output pixels (256 a block), y over the C·R·S rows, z over images.
        unfold = self.launcher(
            self.kernel(variant, {}), Launch((-(-pixels // 256), crs, n), (256, 1, 1)),
            "PP" + "i" * 10, (_ptr(inputs["x"]), _ptr(cols), shape.batch, shape.in_channels, shape.height,
                              shape.width, shape.kernel, shape.kernel, shape.stride, shape.pad, shape.out_height,
                              shape.out_width))
        k = shape.out_channels
        w = inputs["w"]
        if variant.companion is None:  # options.gemm = "cublas"
            gemm = self._cublas_gemm(k, pixels, crs, w, 0, cols, crs * pixels, out, k * pixels, n)
            details = self._library_details()
        else:  # the companion GEMM's own launch, one product per image along z, through its _batched entry
            tiled, params = variant.companion, config.values
            base = tiled.launch_for(GemmShape(k, pixels, crs).dims(), config)
            launch = Launch((base.grid[0], base.grid[1], n), base.block, base.shared_bytes)
            gemm = self.launcher(self.kernel(tiled, params, tiled.kernel + "_batched"), launch,
                                 "PPPiiiqqq", (_ptr(w), _ptr(cols), _ptr(out), k, pixels, crs, 0, crs * pixels,
                                               k * pixels))
            details = Details()

        def run():
            unfold()
            gemm()

        return Prepared(run, out, parts={"im2col": unfold}, details=details)

    def _cudnn_run(self, variant, shape: ConvShape, inputs, out) -> Prepared:
        from gpubench.backends.cudnn_conv import CudnnConvGraph, CudnnUnavailable

        key = (shape, self.tf32)
        try:
            if key not in self._cudnn:
                self._cudnn[key] = CudnnConvGraph(
                    shape.batch, shape.in_channels, shape.height, shape.width, shape.out_channels, shape.kernel,
                    shape.kernel, shape.stride, shape.pad, allow_tf32=self.tf32)
        except CudnnUnavailable as e:
            if "not installed" in str(e) or "not found" in str(e):
                raise GpubenchError(str(e)) from None
            raise Skip(str(e)) from None
        graph = self._cudnn[key]
        x, w = inputs["x"], inputs["w"]
        if variant.options["plans"] == "heuristic":
            plan = graph.heuristic
        else:
            plan = self._fastest_plan(graph, x, w, out)
        details = Details(tf32=self.tf32, engine=plan.engine, plans=len(graph.plans), tensor_cores=plan.tensor_cores,
                          workspace_bytes=plan.workspace_bytes)
        return Prepared(lambda: graph.run(plan, x, w, out), out, details=details)

    def _fastest_plan(self, graph, x, w, out):
        timed = []
        for plan in graph.plans:
            try:
                samples = measure(lambda plan=plan: graph.run(plan, x, w, out), self.clock, PLAN_SEARCH).samples_ms
            except self.cp.cuda.memory.OutOfMemoryError:
                continue  # its workspace does not fit: not a candidate
            except Exception:  # a plan that fails to run is not a candidate either
                continue
            timed.append((summarize(samples).median, plan))
        graph.release_workspaces()
        if not timed:
            raise Skip("no cuDNN plan could run")
        fastest = min(ms for ms, _ in timed)
        return min((plan for ms, plan in timed if ms <= fastest * (1 + PLAN_TIE)), key=lambda plan: plan.index)


def _nvidia_smi(bus_id: str) -> dict:
    """Current clocks, power limit and driver as nvidia-smi reports them (empty where it is absent)."""
    fields = ["driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "power.limit", "temperature.gpu",
              "pstate"]
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                              "-i", bus_id], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values = [v.strip() for v in out.split(",")]
    if len(values) != len(fields):
        return {}
    names = ["driver", "sm_clock_mhz", "memory_clock_mhz", "sm_clock_max_mhz_smi", "power_limit_w",
             "temperature_c", "pstate"]
    return dict(zip(names, values))
