"""Why a cuDNN plan search keeps the plan it keeps: every plan of one int8 convolution, in a fresh process, with its
first call, its second and its median as the search times them (flushed), and what the search's screening rule
(gpubench/backends/cuda/libraries.py: CLEAR, FIRST_USE_MS, SCREEN) would make of it. On the H200 the search at
ResNet-50's 56² int8 layer with bias-relu-add kept eng1 (84 µs) in some processes and eng4_k24=4 (104 µs) in
others; this says whether a plan's first call (its first-use work) decides it.

    python3 tools/gpu/plan_search_probe.py [SIZE CHANNELS STRIDE]     # default: 56 64 1
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpubench.backends import open_backend  # noqa: E402
from gpubench.backends.cuda import libraries as lib  # noqa: E402
from gpubench.core.dtypes import DType  # noqa: E402
from gpubench.measure.timing import measure, summarize  # noqa: E402
from gpubench.ops.conv import ConvLayout, conv_shape  # noqa: E402
from gpubench.ops.epilogue import Epilogue, Fused  # noqa: E402
from gpubench.specs import catalog  # noqa: E402


def main(size: int, channels: int, stride: int) -> None:
    cuda = open_backend("cuda")
    shape = conv_shape(size, stride, dtype=DType.INT8_INT8, layout=ConvLayout.NHWC,
                       fused=Fused(Epilogue.BIAS_RELU_ADD), batch=128, in_channels=channels,
                       out_channels=channels, padding="1")
    seen = {}
    kept = lib.Libraries.cudnn_plan

    def spy(self, variant, graph, x, w, out, shape, key=None):  # the graph, before the search runs on it
        seen.update(graph=graph, x=x, w=w, out=out)
        return kept(self, variant, graph, x, w, out, shape, key)

    lib.Libraries.cudnn_plan = spy
    variant = catalog.Catalog(catalog.builtin()).get("conv", "cuda", "cudnn")
    prepared = cuda.prepare(variant, variant.space.configs[0], shape, cuda.inputs(shape, seed=1))
    print(f"{shape.full_label}: the search kept {prepared.details.engine} of {prepared.details.plans} plans")
    graph, x, w, out = (seen[k] for k in ("graph", "x", "w", "out"))
    rows = []
    for plan in graph.plans:
        def run(plan=plan):
            graph.run(plan, x, w, out)
        try:
            cuda.clock.flush()
            first = cuda.clock.time_ms(run)
            cuda.clock.flush()
            second = cuda.clock.time_ms(run)
            median = summarize(measure(run, cuda.clock, lib.PLAN_SEARCH).samples_ms).median
        except Exception as e:  # noqa: BLE001 - a plan that cannot run is what the search skips too
            print(f"  {plan.engine}: does not run ({type(e).__name__}: {str(e)[:80]})")
            continue
        rows.append((plan.engine, first, second, median))
    fastest = min(m for *_, m in rows)
    for engine, first, second, median in rows:
        cleared = first >= lib.SCREEN_MS and first > lib.CLEAR * fastest + lib.FIRST_USE_MS
        print(f"  {engine:>14}: first {first:9.3f} ms, second {second:8.3f} ms, median {median:8.4f} ms"
              f"{'  <- the first call alone would leave it out' if cleared else ''}")
    graph.release_workspaces()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]] or [56, 64, 1]
    main(*args)
