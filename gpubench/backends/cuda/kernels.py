"""The CUDA backend's own kernels: compiled by nvcc (cached), loaded through PyCUDA, checked against the device's
launch limits, and run as a variant's call (its `before` steps, then its main kernel, sharing workspace arrays
and TMA descriptors), or as the unfold step of an im2col variant.

A mixin of :class:`~gpubench.backends.cuda.backend.CudaBackend`.
"""

from __future__ import annotations

import numpy as np

from gpubench.core.dtypes import DType
from gpubench.execution import nvcc
from gpubench.backends import Prepared, call_arrays, kernel_arguments
from gpubench.backends.cuda import tma
from gpubench.core.errors import Skip
from gpubench.core.phases import phase
from gpubench.ops.conv import ConvShape
from gpubench.results import Details
from gpubench.specs.geometry import SMS, Launch


def _ptr(array) -> np.uintp:
    return np.uintp(array.data.ptr)


class KernelLaunches:
    """Compiling, loading and launching kernels (methods of the CUDA backend)."""

    launch_stream = None  # where launches go: None, the legacy default stream; a graph's capturing stream (--graph)

    def function(self, source, symbol: str, params: dict, arch: str | None = None, includes=()):
        arch = arch or self.arch
        if not arch.startswith(self.arch):
            raise Skip(f"needs {arch}; this GPU is {self.arch}")
        key = (str(source), tuple(sorted(params.items())), arch)
        if key not in self._modules:
            with phase("compile"):
                cubin = nvcc.compile_cubin(source, arch, params, includes=includes)
            with phase("load module"):
                self._modules[key] = self.drv.module_from_file(str(cubin))
        return self._modules[key].get_function(symbol)

    def kernel(self, variant, params: dict, symbol: str | None = None):
        program = variant.code.program
        return self.function(program.source, symbol or program.kernel, params, program.arch, program.includes)

    def launcher(self, fn, launch: Launch, fmt: str, args: tuple):
        fa = self.drv.function_attribute
        limit = fn.get_attribute(fa.MAX_THREADS_PER_BLOCK)
        if launch.threads > limit:
            raise Skip(f"{launch.threads} threads per block, but this kernel can launch at most {limit} here")
        beyond = launch.beyond_limits()
        if beyond:
            raise Skip(beyond)
        if launch.shared_bytes > self.smem_optin:
            raise Skip(f"needs {launch.shared_bytes} bytes of shared memory; this GPU allows {self.smem_optin}")
        if launch.shared_bytes > 48 * 1024:
            fn.set_attribute(fa.MAX_DYNAMIC_SHARED_SIZE_BYTES, launch.shared_bytes)
        fn.prepare(fmt)
        grid, block, smem = launch.grid, launch.block, launch.shared_bytes
        def launch():  # on the legacy default stream, or on the stream a graph is captured on (launch_stream)
            if self.launch_stream is None:
                fn.prepared_call(grid, block, *args, shared_size=smem)
            else:
                fn.prepared_async_call(grid, block, self.launch_stream, *args, shared_size=smem)

        return launch

    def launch_steps(self, variant, config, shape, inputs, out):
        """The launches of a variant's call, in order (its `before` steps, then its main kernel if it has one), and
        the workspace arrays and TMA descriptors they share, by name."""
        dims = shape.dims()
        scratch = {name: self.placed(self.fits(lambda n=n: self.cp.empty(n, dtype=self.cp.float32),
                                               f"workspace {name} ({4 * n / 2**30:.2f} GiB)"))
                   for name, n in variant.code.workspace_sizes(dims, config).items()}  # im2col's columns: placed too
        # TMA descriptors travel like arrays: 128 bytes each in device memory, passed by pointer.
        arrays = call_arrays(shape, inputs, out, scratch)
        for m in variant.code.kernels.tensor_maps:
            values = {**dims, **config.values}
            # no map for this problem (its condition fails, it lacks the optional array, or its layout is not one of
            # the map's): zeros in its place, which the kernel never reads
            if m.array not in arrays or not m.applies(values) or not m.present(shape):
                scratch[m.name] = self.cp.zeros(tma.DESCRIPTOR_BYTES, dtype=self.cp.uint8)
                continue
            pointer = int(arrays[m.array].data.ptr)
            swizzle = m.swizzle_bytes(values)
            if m.im2col:
                encoded = tma.encode_im2col(m.name, pointer, dims, m.resolve(values, shape)[1], m.element(shape),
                                            swizzle)
            else:
                encoded = tma.encode(m.name, pointer, *m.resolve(values, shape), m.element(shape), swizzle)
            scratch[m.name] = self.cp.asarray(np.frombuffer(encoded, dtype=np.uint8))
        launches = []
        for step in variant.code.steps():
            fmt, args = kernel_arguments(step.args, shape, inputs, out, pointer=_ptr, scratch=scratch)
            defines = variant.code.defines(config, shape.dtype, shape.layout, shape.fused.epilogue)
            fn = self.kernel(variant, {**config.values, **defines}, step.kernel)
            launches.append(self.launcher(fn, step.launch_for({**dims, SMS: self.sms}, config), fmt, args))
        return launches, scratch

    def prepare_kernels(self, variant, config, shape, inputs, out) -> Prepared:
        """A kernel variant's call: its `before` steps, then its main kernel, sharing the workspace arrays. Each
        step before the main one is also timed on its own (recorded in parts_ms under its kernel's name)."""
        launches, scratch = self.launch_steps(variant, config, shape, inputs, out)
        details = Details()
        parts = {step.kernel: launch for step, launch in zip(variant.code.kernels.before, launches)}

        def run():
            for launch in launches:
                launch()

        # The launches hold raw pointers: the workspace arrays live until the point releases them.
        return Prepared(launches[0] if len(launches) == 1 else run, out, parts=parts, details=details,
                        release=scratch.clear)

    def prepare_im2col(self, variant, config, shape: ConvShape, inputs, out) -> Prepared:
        """The spec's unfold steps into the column matrix, then cuBLAS: y[n] = w[K, C·R·S] · cols[n]."""
        unfold, scratch = self.launch_steps(variant, config, shape, inputs, out)
        crs, pixels, k = shape.gemm_k, shape.out_pixels, shape.out_channels
        columns = scratch[variant.code.runner.columns]
        gemm = self._cublas_gemm(k, pixels, crs, inputs["w"], 0, columns, crs * pixels, out, k * pixels, shape.batch,
                                 tf32=shape.dtype == DType.TF32)
        parts = {step.kernel: launch for step, launch in zip(variant.code.kernels.before, unfold)}

        def run():
            for launch in unfold:
                launch()
            gemm()

        return Prepared(run, out, parts=parts, release=scratch.clear)

