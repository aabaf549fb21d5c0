"""The CUDA backend: hand-written kernels through PyCUDA, cuBLAS through CuPy, cuBLASLt through nvmath-python,
cuDNN through its frontend.

PyCUDA works on the device's primary context (pycuda.autoprimaryctx), the one CuPy's runtime calls use (PyTorch's
and Triton's too), so all share one address space: inputs are CuPy arrays and kernels get their raw pointers.
Every launch, event and library call goes to the legacy default stream, so the timer's events bracket exactly the
work timed (python_calls.py says how a project's Python functions are held to it); only while a call is captured into
a CUDA graph (--graph) do its launches go to the capturing stream, and the graph is launched on the legacy one.
Arrays of a precision CuPy lacks (bfloat16, fp8) are raw storage of their width (storage.py); their values are read
on the host through ml_dtypes.
"""

from __future__ import annotations

import numpy as np

from gpubench.core.backend_kind import BackendKind
from gpubench.measure import telemetry
from gpubench.backends import ArrayBackend, Prepared
from gpubench.backends.cuda import cupti_clock, placement, profiler, storage
from gpubench.backends.cuda.attention_libraries import AttentionLibraries
from gpubench.backends.cuda.clock import CudaClock, GraphClock
from gpubench.backends.cuda.preheat import Preheater
from gpubench.backends.cuda.device import DeviceFacts
from gpubench.backends.cuda.fused_conv import FusedConvCalls
from gpubench.backends.cuda.grouped_libraries import GroupedLibraries
from gpubench.backends.cuda.kernels import KernelLaunches
from gpubench.backends.cuda.libraries import Libraries
from gpubench.backends.cuda.python_calls import PythonCalls
from gpubench.core.errors import GpubenchError, NoDevice, Skip
from gpubench.core.phases import phase
from gpubench.measure.kernel_clock import Clocks
from gpubench.specs.runners import (CublasLtRunner, CublasRunner, CudnnRunner, CudnnSdpaRunner, GroupedLibraryRunner,
                                    Im2colRunner, KernelRunner, PythonGpuRunner, TorchSdpaRunner)


def import_gpu_stack():
    """(pycuda.driver, cupy) on the primary context, or one line naming what is missing."""
    try:
        import pycuda.driver as drv
    except ImportError as e:
        if "libcuda" in str(e):
            raise NoDevice("NVIDIA driver not found (libcuda cannot be loaded): run on a machine with an NVIDIA "
                           "GPU") from None
        raise NoDevice("PyCUDA is not installed: pip install 'gpubench[gpu]'") from None
    try:
        import cupy
    except ImportError:
        raise NoDevice("CuPy is not installed: pip install cupy-cuda13x (cupy-cuda12x on CUDA 12)") from None
    try:
        drv.init()
        count = drv.Device.count()
    except drv.Error as e:
        raise NoDevice(f"no usable NVIDIA driver or GPU (cuInit: {e})") from None
    if count == 0:
        raise NoDevice("no CUDA device found")
    import pycuda.autoprimaryctx  # noqa: F401  (retains device 0's primary context, CuPy's too)

    return drv, cupy


class CudaBackend(DeviceFacts, KernelLaunches, Libraries, FusedConvCalls, AttentionLibraries, GroupedLibraries,
                  PythonCalls, ArrayBackend):
    """The device's facts (device.py), its kernels (kernels.py), its libraries (libraries.py; the fused convolution's,
    attention's and grouped GEMM's: fused_conv.py, attention_libraries.py, grouped_libraries.py) and a project's
    Python functions (python_calls.py) over one primary context, timed by its clock (clock.py)."""

    name = BackendKind.CUDA
    flushes = True
    memory_name = "device memory"

    def __init__(self):
        self.drv, self.cp = import_gpu_stack()
        # NVML first, before we put any load on the GPU: its idle clock tells whether clocks are locked.
        self.telemetry = telemetry.open_telemetry(self.drv.Context.get_device().pci_bus_id())
        self.xp = self.cp
        self.out_of_memory = (self.cp.cuda.memory.OutOfMemoryError, MemoryError)
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
        self._cupti = None  # the second clock, opened at the first point that asks for it
        self._capture_stream = None
        spin = self.probe("spin")
        self.clock = CudaClock(self.cp, self.l2_bytes, lambda ns: spin(np.int64(ns), block=(1, 1, 1), grid=(1, 1)))
        self._chain_sink = self.cp.zeros(1, dtype=self.cp.int32)  # where the placement probe's chain ends
        self._preheater = Preheater(self.cp)

    def inputs(self, shape, seed: int) -> dict:
        """The shape's inputs, each small one at the place whose lines answer soonest (placement.py)."""
        made = super().inputs(shape, seed)
        with phase("placement"):
            return {name: self.placed(array) for name, array in made.items()}

    def output(self, shape):
        """A point's output, placed like a small input: a tiny kernel's stores wait on their line's half of L2 too
        (the lab's 64² stride-2 outputs, 3.8 KiB, moved `sliding` by 6-10% between two runs at 74ef567)."""
        return self.placed(super().output(shape))

    def spread(self, variant, config, shape, inputs, prepared: Prepared, places: int) -> Prepared:
        """The call timed over `places` sets of its buffers where they are small (placement.spread), each copy and
        each copy's output a page apart (placement.apart); the copies are not probed for the near half of L2:
        eight independent places average it out, and a probe per copy would cost more than the point."""
        with phase("placements"):
            return placement.spread(self.cp, prepared, inputs, prepared.output, lambda copies: self.prepare(
                variant, config, shape, copies, self._output_apart(shape)), places)

    def _output_apart(self, shape):
        made = ArrayBackend.output(self, shape)
        if isinstance(made, dict):
            return {name: placement.apart(self.cp, array) for name, array in made.items()}
        return placement.apart(self.cp, made)

    def placed(self, array):
        return placement.place(self.cp, array, self._line_latency_us)[0]

    def _line_latency_us(self, array) -> float:
        """Median µs of a chain of dependent loads through `array`'s lines, flushed and timed as points are."""
        chain = self.probe("line_chain")
        lines, step = placement.chain_shape(array.nbytes)
        args = (np.uintp(array.data.ptr), np.int32(lines), np.int32(step), np.int32(0),
                np.uintp(self._chain_sink.data.ptr))
        samples = []
        for _ in range(placement.PROBE_SAMPLES):
            self.clock.flush()
            samples.append(self.clock.time_ms(lambda: chain(*args, block=(1, 1, 1), grid=(1, 1))))
        return placement.median_us(samples)

    def preheat(self, seconds: float) -> None:
        self._preheater.before(seconds)

    def worked(self) -> None:
        self._preheater.after()

    def kernel_tracer(self, policy):
        """CUPTI's kernel records beside the events where the policy asks for both clocks and `cupti` imports here
        (opened once per process); else None, as where CUPTI cannot trace here (the environment's software.cupti
        says whether it is installed; the run's caption says when no point got kernel times)."""
        if getattr(policy, "clocks", Clocks.EVENTS) != Clocks.BOTH or self._cupti is False:
            return None
        try:
            if self._cupti is None:
                if cupti_clock.missing() is not None:
                    raise ImportError(cupti_clock.missing())
                self._cupti = cupti_clock.CuptiClock()
            return self._cupti.point()
        except Exception:  # noqa: BLE001 - not installed, or CUPTI refuses here (a profiler attached, privileges,
            self._cupti = False  # a library older than the driver): the events alone, for the rest of the process
            return None

    def timed_clock(self, clock, policy, prepared):
        """`clock`, or with policy.graph a GraphClock over it that captures each call N times into a CUDA graph."""
        if not policy.graph:
            return clock
        if not prepared.capturable:  # its launches would run at once on the legacy stream, and the graph be empty
            raise Skip("--graph: a Python variant launches on its framework's current stream, which gpubench does not "
                       "capture; time it without --graph")
        return GraphClock(clock, self.captured, policy.graph)

    def captured(self, run, n: int):
        """A CUDA graph of `n` calls of `run`, captured on a stream of its own (PyCUDA's launches through
        launch_stream, cuBLAS, cuBLASLt and cuDNN through CuPy's current stream), to be launched on the legacy
        default stream between the clock's events: (launch, release). A call that cannot be captured (one that
        synchronizes, allocates, or launches on the legacy stream itself, as a Python variant does) is skipped with
        the reason."""
        cp = self.cp
        graph = None
        try:
            if self._capture_stream is None:  # CU_STREAM_NON_BLOCKING: no implicit tie to the legacy stream
                self._capture_stream = self.drv.Stream(1)
            stream = cp.cuda.ExternalStream(self._capture_stream.handle)  # the same stream, as CuPy's
            self.launch_stream = self._capture_stream
            with stream:
                stream.begin_capture(cp.cuda.runtime.streamCaptureModeRelaxed)
                try:
                    for _ in range(n):
                        run()
                finally:
                    graph = stream.end_capture()
            stream.synchronize()
        except Exception as e:  # noqa: BLE001 - CUDA's refusal, whatever raised it
            text = str(e).strip().splitlines()
            raise Skip(f"--graph: this call cannot be captured in a CUDA graph ({type(e).__name__}: "
                       f"{text[0] if text else ''})") from None
        finally:
            self.launch_stream = None
        null = cp.cuda.Stream.null
        return (lambda: graph.launch(null)), (lambda: None)  # the graph goes with its last reference

    def upload(self, host: np.ndarray):
        """A host array on the device, as raw storage where CuPy lacks its element type."""
        return self.cp.asarray(storage.raw_view(host))

    def empty(self, dims: tuple[int, ...], host_type):
        return self.cp.empty(dims, dtype=storage.device_type(host_type))

    def values64(self, array, host_type):
        """float64 values of a device array; raw storage is read as its host type on the host (ml_dtypes)."""
        if array.dtype == np.dtype(host_type):
            return array.astype(self.cp.float64)
        host = storage.as_host(self.cp.asnumpy(array), host_type)
        return self.cp.asarray(host.astype(np.float64))

    def poison(self, output) -> None:
        """NaN in the output's own type (raw bfloat16 storage too); int32 gets its most negative value."""
        if output.dtype in storage.HOST_OF_RAW or not np.issubdtype(output.dtype, np.integer):
            output.fill(storage.nan_bits(output.dtype)[0])
        else:
            output.fill(np.iinfo(output.dtype).min)

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

    def profiled_call(self, run, name: str) -> None:
        """`run` once, bracketed for Nsight Compute (profiler.py; gpubench/execution/profiled.py starts it)."""
        profiler.bracketed(self.cp, run, name)

    # What prepares each kind of runner's call: (backend, variant, config, shape, inputs, out) -> Prepared.
    PREPARE = {
        KernelRunner: KernelLaunches.prepare_kernels,
        Im2colRunner: KernelLaunches.prepare_im2col,
        CublasRunner: Libraries.prepare_cublas,
        CublasLtRunner: Libraries.prepare_cublaslt,
        CudnnRunner: Libraries.prepare_cudnn,
        CudnnSdpaRunner: AttentionLibraries.prepare_cudnn_sdpa,
        TorchSdpaRunner: AttentionLibraries.prepare_torch_sdpa,
        GroupedLibraryRunner: GroupedLibraries.prepare_grouped_library,
        PythonGpuRunner: PythonCalls.prepare_python,
    }

    def prepare(self, variant, config, shape, inputs, output=None) -> Prepared:
        prepare = self.PREPARE.get(type(variant.code.runner))
        if prepare is None:
            raise GpubenchError(f"the cuda backend cannot run variant {variant.name} "
                                f"(runner {variant.code.runner.NAME})")
        return prepare(self, variant, config, shape, inputs, self.output(shape) if output is None else output)

