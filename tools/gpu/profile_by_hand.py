"""The calls `gpubench profile` profiles, made outside gpubench's harness for an ncu run by hand: each named
configuration prepared on the backend, its check call and three warm-up calls made, then one call bracketed with
cudaProfilerStart/Stop (tools/gpu/events.py), so that `ncu --profile-from-start off` profiles that call alone.

    ncu --profile-from-start off --clock-control none --csv --page raw --print-units base --metrics ... \
        python3 tools/gpu/profile_by_hand.py gemm 4096 global:16 shared:16 tiled cublas
    ... python3 tools/gpu/profile_by_hand.py conv14 fp16 cudnn "tc-wgmma-tma:128x128x64 s6 c1 ping1 u1 d1 q1"

A NAME alone takes every configuration of the variant; NAME:LABEL the one of that label. gemm: the lab's fp32 nn
square GEMM; conv14: ResNet-50's 14² layer (N 128, C = K = 256, 3×3, stride 1, pad 1) in NHWC.
Prints one line per bracketed call, in order (ncu's launches follow the same order).
"""

import sys

from gpubench.backends.cuda import CudaBackend
from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmShape
from gpubench.ops.conv import conv_shape
from gpubench.specs import catalog
from gpubench.specs.variant import Axis
from events import bracketed  # tools/gpu/events.py

WARMUP = 4  # the check call and three warm-up calls, as gpubench makes before its bracketed call


def shape_of(op: str, arg: str):
    if op == "gemm":
        return GemmShape(int(arg), int(arg), int(arg))
    return conv_shape(14, 1, batch=128, in_channels=256, out_channels=256, padding=1, dtype=DType(arg),
                      layout=ConvLayout.NHWC)


def main(op: str, arg: str, picks: list[str]) -> None:
    known = catalog.Catalog(catalog.builtin())
    backend = CudaBackend()
    shape = shape_of(op, arg)
    inputs = backend.inputs(shape, seed=0)
    for pick in picks:
        name, _, label = pick.partition(":")
        variant = known.get("gemm" if op == "gemm" else "conv", "cuda", name)
        space = variant.space
        configs = space.configs_for((int(label),)) if space.axis == Axis.BLOCK and label else space.configs
        for config in [c for c in configs if not label or c.label == label]:
            prepared = backend.prepare(variant, config, shape, inputs)
            bracketed(prepared.run, warmup=WARMUP)
            print(f"bracketed {variant.name} {config.label} {shape.full_label}", flush=True)
            prepared.release()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
