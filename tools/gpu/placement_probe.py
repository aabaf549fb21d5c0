"""Whether where a small point's buffers lie still decides its time on this GPU, inside one process: the lab points
that moved most between two processes (tools/gpu/shift_probe.sh), each prepared TRIALS times, every time on freshly
allocated inputs and output, (a) placed as gpubench places them (backends/cuda/placement.py: the candidate whose
lines answer soonest) and (b) left where the allocator put them; every preparation timed twice, in two passes, as
points are (flushed, in queued batches). If one preparation agrees with itself across the passes while the
preparations differ by the few percent two processes differ by, the buffers' places are what moves the point.

    python3 tools/gpu/placement_probe.py          # ~20 s on one GPU; run it in a few fresh processes
"""

import statistics
import sys

from gpubench.backends.cuda import CudaBackend
from gpubench.ops.conv import conv_shape
from gpubench.specs import catalog, parse

CATALOG = catalog.Catalog(catalog.builtin())
POINTS = [("sliding", "8", 32, 2), ("sliding", "24", 32, 2), ("sliding", "8", 32, 3), ("sliding", "32", 128, 2),
          ("im2col-cublas", None, 64, 2), ("im2col-cublas", None, 64, 1), ("cudnn", None, 32, 2)]
TRIALS, BATCH, BATCHES = 6, 40, 3


def config_of(variant, label):
    configs = variant.space.configs_for(parse.LAB_BLOCK_SIZES)
    return next(c for c in configs if label is None or c.label == label)


def median_us(cuda, prepared) -> float:
    samples = []
    for _ in range(BATCHES):
        samples += cuda.clock.time_batch_ms(prepared.run, BATCH, True)
    return statistics.median(samples) * 1000


def probe(cuda, name, label, size, stride, placed: bool) -> tuple[list[float], list[float]]:
    variant, shape = CATALOG.get("conv", "cuda", name), conv_shape(size, stride)
    config = config_of(variant, label)
    keep = cuda.placed
    if not placed:
        cuda.placed = lambda array: array
    try:
        prepared = []
        for trial in range(TRIALS):
            inputs = cuda.inputs(shape, seed=trial % 2)
            p = cuda.prepare(variant, config, shape, inputs)
            for _ in range(3):
                p.run()
            prepared.append((p, inputs))  # held: the next trial's buffers land elsewhere
        first = [median_us(cuda, p) for p, _ in prepared]
        second = [median_us(cuda, p) for p, _ in prepared]
    finally:
        cuda.placed = keep
    return first, second


def main() -> None:
    cuda = CudaBackend()
    tag = sys.argv[1] if len(sys.argv) > 1 else "process"
    for name, label, size, stride in POINTS:
        for placed in (True, False):
            first, second = probe(cuda, name, label, size, stride, placed)
            lo, hi = min(first), max(first)
            within = max(abs(a / b - 1) for a, b in zip(first, second))
            print(f"{tag} {name} {label or ''} {size} s{stride} {'placed' if placed else 'unplaced':8} "
                  f"trials {' '.join(f'{t:.3f}' for t in first)} µs | spread {hi / lo - 1:+.1%} | "
                  f"same preparation twice: within {within:.1%}", flush=True)


if __name__ == "__main__":
    main()
