"""Are the eight sets of buffers a small call is timed on eight independent places?

On an H200 the lab's `sliding` convolutions at 32² and 64² stride 2 still moved 1.9-2.9% (SD) from one fresh
process to the next with eight sets of buffers (docs/evidence/aa-processes-h200.md), about what one set's spread
over √8 would leave if the sets were independent draws of a place, and far more than a probe that allocated the same
buffers the same way in each process saw. The seven copies (backends/cuda/placement.py `spread`) come from CuPy's
pool one after another, so they may lie side by side in one 2 MiB page of the GPU's memory and share much of its
address pattern: then a process draws one pattern, not eight places.

Inside one process, each of DRAWS draws prepares the point afresh (its buffers held, so each draw lies elsewhere)
three ways, in turn: `one` (its own buffers only, places = 1), `pool` (as gpubench spreads it: seven pool copies)
and `far` (each copy, and each copy's output, at the start of a block of its own of 2 MiB or more). It prints each
way's draw medians and their spread. If `far` spreads by about `one`'s over √8 and `pool` by clearly more, the copies'
contiguity is what keeps the process-to-process spread, and `spread` should allocate them apart.

    python3 tools/gpu/spread_probe.py          # about a minute on one GPU, from the repository root
"""

from __future__ import annotations

import statistics
from types import SimpleNamespace

from gpubench.backends import ArrayBackend
from gpubench.backends.cuda import CudaBackend, placement
from gpubench.ops.conv import conv_shape
from gpubench.specs import catalog, parse

CATALOG = catalog.Catalog(catalog.builtin())
POINTS = [("sliding", "8", 32, 2), ("sliding", "24", 64, 2), ("sliding", "16", 128, 1)]
DRAWS, BATCH, BATCHES, PLACES = 10, 40, 4, 8
BLOCK = 2 << 20  # the GPU's large page: a copy at the start of a block this large lies in a page of its own
WAYS = ("one", "pool", "far")


def median_us(cuda, run) -> float:
    samples = []
    for _ in range(BATCHES):
        samples += cuda.clock.time_batch_ms(run, BATCH, True)
    return statistics.median(samples) * 1000


def far_copy(cp):
    def copy(array):
        block = cp.empty(BLOCK + array.nbytes, dtype=cp.uint8)
        out = block[:array.nbytes].view(array.dtype).reshape(array.shape)
        out[...] = array
        return out
    return copy


def prepared_way(cuda, variant, config, shape, way: str):
    inputs = cuda.inputs(shape, seed=0)  # placed as every point's are
    prepared = cuda.prepare(variant, config, shape, inputs)
    if way == "one":
        return prepared
    if way == "pool":
        return cuda.spread(variant, config, shape, inputs, prepared, PLACES)
    copy = far_copy(cuda.cp)
    shim = SimpleNamespace(ndarray=cuda.cp.ndarray, copy=copy)
    return placement.spread(shim, prepared, inputs, prepared.output, lambda copies: cuda.prepare(
        variant, config, shape, copies, copy(ArrayBackend.output(cuda, shape))), PLACES)


def main() -> None:
    cuda = CudaBackend()
    for name, label, size, stride in POINTS:
        variant, shape = CATALOG.get("conv", "cuda", name), conv_shape(size, stride)
        config = next(c for c in variant.space.configs_for(parse.LAB_BLOCK_SIZES) if c.label == label)
        held, medians = [], {way: [] for way in WAYS}
        for _ in range(DRAWS):
            for way in WAYS:
                p = prepared_way(cuda, variant, config, shape, way)
                for _ in range(3 * PLACES):
                    p.run()
                medians[way].append(median_us(cuda, p.run))
                held.append(p)  # the next draw's buffers land elsewhere
        for way in WAYS:
            m = medians[way]
            sd = statistics.stdev(m) / statistics.mean(m)
            print(f"{name} {label} {size}² s{stride} {way:4s}: SD {sd:.2%}, range {max(m) / min(m) - 1:.1%} | "
                  + " ".join(f"{x:.3f}" for x in m) + " µs", flush=True)
        for p in held:
            p.release()


if __name__ == "__main__":
    main()
