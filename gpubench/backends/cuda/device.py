"""What the CUDA backend measures about its device before and around a run: its description and limits for
the coordinator, the environment a run records, the empty-kernel floor, the roofline's ceilings (FFMA peak, each
tensor-core precision through its library at 8192³, DRAM copy, L2 read) and energy per call through NVML.

A mixin of :class:`~gpubench.backends.cuda.backend.CudaBackend`: it reads the backend's device, clock, telemetry
and probes.
"""

from __future__ import annotations

import math
import subprocess
from typing import Collection

import numpy as np

from gpubench.core import dtypes
from gpubench.execution import nvcc
from gpubench.core import paths
from gpubench.measure import telemetry
from gpubench.backends.cuda import blas, cupti_clock, storage
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.ops.gemm import GemmLayout
from gpubench.core.errors import GpubenchError, Skip
from gpubench.core.phases import phase
from gpubench.ops.gemm import GemmShape
from gpubench.specs.runners import CublasLtRunner
from gpubench.measure.timing import TimingPolicy, measure, summarize


LT_PEAKS = (DType.FP8, DType.INT8)  # measured through cuBLASLt (cuBLAS's GemmEx takes neither)
CHUNK_MS = 1.0  # an energy window queues calls this much GPU time at a time, one chunk always ahead
WAIT_POLL_S = 0.0005  # how often a wait for a window's moment polls the instant power


def _ptr(array) -> np.uintp:
    return np.uintp(array.data.ptr)


class DeviceFacts:
    """The device's description, environment, floor, ceilings and energy (methods of the CUDA backend)."""

    def describe(self) -> dict:
        """What the coordinator needs before it plans: the device, its limits, the libraries here."""
        from gpubench.backends.cuda import cudnn_conv

        return {"device": self.device_name, "pci_bus_id": self.device.pci_bus_id(), "arch": self.arch,
                "max_threads": self.max_threads,
                "smem_optin": self.smem_optin, "sms": self.sms,
                "dtypes": [str(d) for d in storage.dtypes_for(self.device.compute_capability())],
                "libraries": {"cudnn": cudnn_conv.cudnn_version(), CublasLtRunner.LIBRARY: blas.lt_version()}}

    def environment(self, precisions: Collection[DType] | None = None) -> dict:
        """The device and software a run records; the ceilings of `precisions` only (None: every precision this
        GPU computes), so that a run measures the peaks its own points are set against and no others."""
        from gpubench.backends.cuda import cudnn_conv

        a, d = self.drv.device_attribute, self.device
        major, minor = d.compute_capability()
        free, total = self.cp.cuda.runtime.memGetInfo()
        rt = self.cp.cuda.runtime.runtimeGetVersion()
        drv_ver = self.drv.get_driver_version()
        import cupy
        import pycuda

        with phase("ceilings"):
            ceilings = self.ceilings(precisions)
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
                "floor_ms": self._timed_floor_ms(),
                "ceilings": ceilings,
                "copy_gbps": ceilings["copy_gbps"],
            },
            "software": {
                "cuda_driver_api": f"{drv_ver // 1000}.{drv_ver % 1000 // 10}",
                "cuda_runtime": f"{rt // 1000}.{rt % 1000 // 10}",
                "nvcc": nvcc.nvcc_version(nvcc.find_nvcc()) if nvcc.find_nvcc() else None,
                "pycuda": pycuda.VERSION_TEXT, "cupy": cupy.__version__, "cudnn": cudnn_conv.cudnn_version(),
                "cublaslt": blas.lt_version(), "cupti": cupti_clock.version(),
                "numpy": np.__version__,
            },
        }

    def probe(self, symbol: str):
        return self.function(paths.cuda_src_dir() / "probes.cu", symbol, {})

    def _timed_floor_ms(self) -> float:
        with phase("floor"):
            return self.floor_ms()

    def floor_ms(self) -> float:
        """The median of an empty kernel timed as every point is (flush, events, queued batches)."""
        empty = self.probe("empty")
        timing = measure(lambda: empty(block=(1, 1, 1), grid=(1, 1)), self.clock,
                         TimingPolicy(warmup=3, reps=200, min_reps=50, budget_s=0.3))
        return summarize(timing.samples_ms).median

    def launch_floor_us(self) -> float:
        """An empty kernel timed as a short call is but unflushed, to a finer grain than floor_ms: what a worker
        is chosen by among fresh processes (gpubench/execution/launch_floor.py)."""
        empty = self.probe("empty")
        return self.clock.floor_us(lambda: empty(block=(1, 1, 1), grid=(1, 1)))

    def ceilings(self, precisions: Collection[DType] | None = None) -> dict:
        """The roofline's ceilings, measured here: FP32 FFMA peak, each tensor-core precision of `precisions`
        (peak_precisions) through its library, DRAM copy and L2 read."""
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
        out.update(self.tensor_core_peaks(once, peak_precisions(
            storage.dtypes_for(self.device.compute_capability()), precisions)))
        return out  # its buffers go back to CuPy's pool as it returns

    def tensor_core_peaks(self, policy: TimingPolicy, precisions: list[DType], n: int = 8192) -> dict:
        """The ceiling of each of `precisions` as its library reaches it: an n³ product in the `nt` layout (what
        tensor cores read best) on random data in the dtype (zeros would run faster than real data), one operand
        used for both A and B. TF32, FP16 and BF16 through cuBLAS; FP8 and INT8 through cuBLASLt, where the
        library has them (a refusal leaves the ceiling out)."""
        out = {}
        rng = np.random.default_rng(0)
        for dtype in precisions:
            shape = GemmShape(n, n, n, dtype, GemmLayout.NT)
            host, scale = dtypes.draw(rng, (n, n), dtype)
            operand = self.upload(host)
            inputs = {"A": operand, "B": operand}
            if scale is not None:
                inputs["A_scale"] = inputs["B_scale"] = self.upload(np.array([scale], np.float32))
            c = self.output(shape)
            prepare = self.prepare_cublaslt if dtype in LT_PEAKS else self.prepare_cublas
            try:
                prepared = prepare(None, None, shape, inputs, c)
            except (Skip, GpubenchError):
                continue
            try:
                ms = summarize(measure(prepared.run, self.clock, policy).samples_ms).median
            finally:
                prepared.release()
            out[PRECISIONS[dtype].ceiling] = round(shape.flops / ms / 1e6)
        return out

    def energy_aside(self, run, policy: TimingPolicy, earlier=None):
        """The point's energy window, taken between its timed samples at the moment it costs least: when the next
        refresh of the instant power is LEAD_S ahead (telemetry.aligned), so that the window's calls run just
        through the time that refresh's reading describes and it ends on it. `earlier()`, where given, goes first
        and may use the moment for an earlier point's waiting window (gpubench/execution/energy_queue.py): True if it did.
        Once per point; None without instant power. Started anywhere else, a window waits for a refresh: 84 ms a
        point on average on an H100."""
        if not self.telemetry.has_instant:
            return None

        def aside(timing) -> None:
            if earlier is not None and earlier():
                return
            if timing.window is not None or not self.window_due():
                return
            median_ms = summarize(timing.samples_ms).median
            if telemetry.wants_window(timing.batch, median_ms, policy.reps):
                with phase("energy"):
                    timing.window = self.take_window(run, median_ms)

        return aside

    def window_due(self) -> bool:
        """Whether an energy window started now would end on the next refresh of the instant power."""
        return self.telemetry.has_instant and telemetry.aligned(self.telemetry.refreshes, self.clock.host_time())

    def wait_for_window(self, max_s: float = telemetry.POWER_WINDOW_MAX_S) -> None:
        """Poll the instant power (which teaches its refreshes) until a window is due, or max_s has gone by."""
        if not self.telemetry.has_instant:
            return
        with phase("energy wait"):
            until = self.clock.host_time() + max_s
            while not self.window_due() and self.clock.host_time() < until:
                self.telemetry.instant_mw()
                self.clock.pause(WAIT_POLL_S)

    def take_window(self, run, median_ms: float) -> dict:
        """A window of the call run back to back now, ended at the first refresh after SETTLE_S ({}: none came)."""
        chunk = max(1, math.ceil(CHUNK_MS / max(median_ms, 1e-3)))
        return telemetry.power_window(lambda go_on: self.clock.busy(run, chunk, go_on), self.telemetry,
                                      clock=self.clock.host_time) or {}

    def window_wanted(self, timing) -> bool:
        """Whether a measured point still needs a window of its own: the GPU reads instant power, its own timed
        calls carry no energy, and no window was taken between them."""
        if not self.telemetry.has_instant or not timing.samples_ms or timing.window:
            return False
        median_ms = summarize(timing.samples_ms).median
        return telemetry.timed_energy(timing.instant, timing.batch, median_ms, len(timing.samples_ms)) is None

    def energy_later(self, run, flush: bool, flops: float, timing) -> dict | None:
        """A waiting point's energy (energy_queue.py): its window taken now, at a refresh's moment."""
        timing.window = self.take_window(run, summarize(timing.samples_ms).median)
        return self.energy(run, flush, flops, timing)

    def energy(self, run, flush: bool, flops: float, timing=None) -> dict | None:
        """Joules per call (telemetry.py says from what): the instant power between the point's own timed calls
        where they are long, else a window of calls made back to back (no flush: a flush costs energy of its own,
        as much as a small kernel's) taken between them (energy_aside) or after them, read by instant power or,
        without it, the energy counter."""
        median_ms = summarize(timing.samples_ms).median if timing and timing.samples_ms else None
        window = None
        if median_ms is not None:
            window = telemetry.timed_energy(timing.instant, timing.batch, median_ms, len(timing.samples_ms))
            if window is None:
                window = timing.window or None
            if window is None:
                window = self.take_window(run, median_ms) or None
        if window is None:
            window = telemetry.energy_window(lambda n: self.clock.run_many(run, n, False), self.telemetry)
        if window is None:
            return None
        joules = window["joules_per_call"]
        return {"joules_per_call": joules, "gflops_per_w": flops / joules / 1e9, "window_power_w": window["power_w"],
                "energy_window_calls": window["calls"], "energy_from": window["source"]}

    def copy_bandwidth(self, nbytes: int = 1 << 30) -> float:
        """Device-to-device copy, GB/s counting bytes read plus written: the memory-bound ceiling."""
        cp = self.cp
        src, dst = cp.empty(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
        samples = measure(lambda: cp.copyto(dst, src), self.clock, TimingPolicy(warmup=2, reps=10, budget_s=0.5))
        return 2 * nbytes / summarize(samples.samples_ms).median / 1e6


def peak_precisions(available: list[DType], asked: Collection[DType] | None) -> list[DType]:
    """The precisions whose tensor-core peak a run measures: those of `asked` (None: all) this GPU computes, one per
    ceiling (an int8 output of another type is int8's peak, measured as int8), FP32 left out (the FFMA microbenchmark is its ceiling). Each costs an 8192² draw on the host and seconds of
    products, so an FP32 run such as the lab measures none."""
    wanted = {PRECISIONS[d].ceiling for d in (available if asked is None else asked)}
    first = {PRECISIONS[d].ceiling: d for d in reversed(available)}  # int8-fp32 and int8-int8 share int8's peak
    return [d for d in available if d != DType.FP32 and PRECISIONS[d].ceiling in wanted and first[
        PRECISIONS[d].ceiling] == d]


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
