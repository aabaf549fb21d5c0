"""Are the eight sets of buffers a small call is timed on eight independent places?

On an H200 the lab's `sliding` convolutions at 32² and 64² stride 2 moved 1.9-2.9% (SD) from one fresh process to
the next with eight sets of buffers taken from CuPy's pool one after another, about what one set's spread would
leave if the sets were one draw, not eight. Copies made side by side lie mostly in one 2 MiB page of the GPU's
memory, so a process draws one place for them all.

Inside one process, each of DRAWS draws prepares the point afresh (its buffers held, so each draw lies elsewhere)
three ways, in turn: `one` (its own buffers only, places = 1), `side` (seven copies side by side from the pool, as
gpubench once spread them) and `apart` (as gpubench spreads them now, backends/cuda/placement.py `apart`: each copy,
and each copy's output, at the start of a 2 MiB page of its own). It prints each way's draw medians and their
spread. If the copies are independent places, `apart` spreads by about `one`'s over √8, and `side` by more.

On an H200 (docs/evidence/spread-probe-h200.txt, whose `pool` is `side` here and `far` is `apart`, then a page-sized
allocation per copy) `side` spread by 0.9-2.2% and `apart` by 0.5-0.7%, against `one`'s 0.5-1.9%.

    python3 tools/gpu/spread_probe.py          # about a minute on one GPU, from the repository root
"""

from __future__ import annotations

import itertools
import statistics
from types import SimpleNamespace

from gpubench.backends import ArrayBackend
from gpubench.backends.cuda import CudaBackend
from gpubench.ops.conv import conv_shape
from gpubench.specs import catalog, parse

CATALOG = catalog.Catalog(catalog.builtin())
POINTS = [("sliding", "8", 32, 2), ("sliding", "24", 64, 2), ("sliding", "16", 128, 1)]
DRAWS, BATCH, BATCHES, PLACES = 10, 40, 4, 8
WAYS = ("one", "side", "apart")


def median_us(cuda, run) -> float:
    samples = []
    for _ in range(BATCHES):
        samples += cuda.clock.time_batch_ms(run, BATCH, True)
    return statistics.median(samples) * 1000


def prepared_way(cuda, variant, config, shape, way: str):
    inputs = cuda.inputs(shape, seed=0)  # placed as every point's are
    prepared = cuda.prepare(variant, config, shape, inputs)
    if way == "one":
        return prepared
    if way == "apart":
        return cuda.spread(variant, config, shape, inputs, prepared, PLACES)
    return side_by_side(cuda, variant, config, shape, inputs, prepared)


def side_by_side(cuda, variant, config, shape, inputs, prepared):
    """spread's copies as the pool hands them out one after another, and outputs where the allocator puts them."""
    copies = [{name: cuda.cp.copy(a) if isinstance(a, cuda.cp.ndarray) else a for name, a in inputs.items()}
              for _ in range(PLACES - 1)]
    others = [cuda.prepare(variant, config, shape, c, ArrayBackend.output(cuda, shape)) for c in copies]
    turns = itertools.cycle([prepared.run] + [o.run for o in others])
    return SimpleNamespace(run=lambda: next(turns)(), release=lambda: [q.release() for q in [prepared, *others]])


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
