"""The tensor-core convolutions' configurations on the ResNet-50 layers, outside gpubench's harness: each
configuration launched back to back (tools/gpu/events.py: CUDA events, L2 not flushed, median of REPS = 20 calls),
for a quick look at configurations the spec does not list, and as the program ncu profiles (no wait kernels, every
launch is the kernel's).

    python3 tools/gpu/tc_conv_probe.py 56x64 14x256 56x128s2          # the spec's configurations, fp16
    EXTRA="tc-wgmma:BM=128,BN=256,STAGES=4;tc-implicit:BM=128,BN=128,BK=64,WM=64,WN=64,STAGES=3" DTYPE=bf16 \
        python3 tools/gpu/tc_conv_probe.py 28x128
    VARIANTS=tc-wgmma python3 tools/gpu/tc_conv_probe.py 7x512    # one variant (default: all four)
    ONLY="256x64x64 s9 swap1,256x64x64 s5 c1" VARIANTS=tc-wgmma-halo,tc-wgmma-tma python3 tools/gpu/tc_conv_probe.py 56x64
                                                                   # only the configurations of these labels
    BRACKET=1 VARIANTS=cudnn,tc-wgmma-tma ncu --profile-from-start off ... python3 tools/gpu/tc_conv_probe.py 14x256
        # cuDNN's best plan beside ours (ONLY leaves the library in); each configuration's one call after three
        # warm-ups is bracketed for a profiler, so its plan search and compilation are not profiled
Prints one line per layer × configuration: median µs and TFLOP/s. Outputs are not verified here (the gpu tests and
the sweep do that).
"""

import os
import sys

from gpubench.specs import catalog
from gpubench.backends.cuda import CudaBackend
from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.conv import conv_shape

from events import bracketed, median_ms  # tools/gpu/events.py


def layer(text: str):
    """'56x64' (size × channels, stride 1) or '56x128s2'."""
    size, rest = text.split("x")
    channels, _, stride = rest.partition("s")
    c = int(channels)
    return conv_shape(int(size), int(stride or 1), batch=128, in_channels=c, out_channels=c, padding=1,
                      dtype=DType(os.environ.get("DTYPE", "fp16")), layout=ConvLayout.NHWC)


def main(layers):
    known = catalog.Catalog(catalog.builtin())
    names = os.environ.get("VARIANTS", "tc-implicit,tc-wgmma,tc-wgmma-ws,tc-wgmma-tma").split(",")
    variants = [known.get("conv", "cuda", n) for n in names]
    extras = [e.partition(":") for e in os.environ.get("EXTRA", "").split(";") if e]
    backend = CudaBackend()
    for text in layers:
        shape = layer(text)
        inputs = backend.inputs(shape, seed=1)
        for v in variants:
            mine = [v.space.config(dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in params.split(",")))
                    for name, _, params in extras if name == v.name]
            only = [label for label in os.environ.get("ONLY", "").split(",") if label]
            for c in [c for c in list(v.space.configs) + mine if not only or v.entry.baseline or c.label in only]:
                prepared = backend.prepare(v, c, shape, inputs)
                if os.environ.get("BRACKET"):
                    bracketed(prepared.run)
                reps = int(os.environ.get("REPS", 20))
                ms = median_ms(prepared.run, reps=reps, warmup=min(reps, 3))
                print(f"{text:>10} {shape.dtype} {v.name:<12} {c.label:<28} {ms * 1e3:8.1f} us "
                      f"{shape.flops / ms / 1e9:7.1f} TFLOP/s", flush=True)
                prepared.release()


if __name__ == "__main__":
    main(sys.argv[1:])
