"""The microsecond tools on a GPU: both clocks on the lab's small convolutions, `gpubench ab` against planted
slowdowns and against itself, and one configuration timed as a CUDA graph. Run from the repository root on the GPU
machine, with the cupti-python wheels carried (WHEELS, default .devwheels: cupti_python, nvidia_cuda_cupti,
pyelftools, and cuda_bindings/cuda_pathfinder where the machine lacks them):

    python3 tools/gpu/micro.py            # writes under $OUT (8 files), about 3-4 minutes of GPU time

(a) tools/gpu/lab-small.toml (the lab's 132 conv-small points) with --clock both: the distribution of each point's
    events/CUPTI ratio of medians, per variant, the points past 5%, and the kernels cuBLAS and cuDNN ran; then the
    same points with the events alone, compared: whether recording CUPTI moves the events.
(b) `gpubench ab` on tools/gpu/planted/planted_gemm.cuh: the same naive GEMM as A, and as B with every block first
    waiting PLANT_CYCLES SM cycles. A short A/B with a first guess measures the share those cycles add; the cycles
    are scaled to the target (2% at 256, a ~10 µs call; 1% at 1024, a ~1 ms call) and the A/B runs again, one
    process of at most a minute each; its verdict should be `slower` (exit 1). Then A against A (exit 0, `same`).
    Each A/B runs with --clock both: the rounds' test on CUPTI's kernel times is printed beside the events'.
(c) the naive GEMM and cuBLAS at 256, and the sliding convolution and cuDNN at 64² stride 2, timed alone and as a
    CUDA graph of 20 calls (--graph 20, with both clocks), shown side by side with `compare --across`.

Files: micro.log (everything printed), conv-small-clocks.json, ab-10us.json, ab-1ms.json, ab-aa.json,
gemm-alone.json, gemm-graph.json, conv-graph.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = Path(os.environ.get("OUT", "/tmp/micro-out"))
SITE = Path("/tmp/cupti-site")
LOG = None
HEADER = REPO / "tools" / "gpu" / "planted" / "planted_gemm.cuh"
PLANTS = [("10us", 256, 0.02, 400), ("1ms", 1024, 0.01, 5000)]  # label, size, target share, first guess (cycles)


def say(text: str = "") -> None:
    print(text, flush=True)
    LOG.write(text + "\n")
    LOG.flush()


def env() -> dict:
    e = dict(os.environ)
    paths = [str(REPO), "/tmp/lead-site", str(SITE)]
    e["PYTHONPATH"] = ":".join(paths + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e["LD_LIBRARY_PATH"] = ":".join([str(SITE / "nvidia" / "cu13" / "lib")] +
                                    ([e["LD_LIBRARY_PATH"]] if e.get("LD_LIBRARY_PATH") else []))
    e["PYTHONUNBUFFERED"] = "1"
    return e


def gpubench(*args: str, quiet: bool = False) -> tuple[int, str]:
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "gpubench", *args], capture_output=True, text=True, env=env(),
                       cwd=REPO)
    took = time.perf_counter() - started
    say(f"$ gpubench {' '.join(args)}  -> exit {r.returncode} in {took:.1f} s")
    if not quiet:
        for line in (r.stdout + r.stderr).splitlines():
            say("  " + line)
    elif r.returncode not in (0, 1, 3):
        say("  " + (r.stderr.strip().splitlines() or ["(no message)"])[-1])
    return r.returncode, r.stdout


def install_cupti() -> None:
    wheels = Path(os.environ.get("WHEELS", REPO / ".devwheels"))
    wanted = ["cupti_python", "nvidia_cuda_cupti", "pyelftools"]
    for module, wheel in (("cuda.bindings", "cuda_bindings"), ("cuda.pathfinder", "cuda_pathfinder")):
        if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode != 0:
            wanted.append(wheel)
    found = [w for name in wanted for w in sorted(wheels.glob(f"{name}-*.whl"))]
    cupti_set = ("cupti_python", "nvidia_cuda_cupti", "pyelftools", "cuda_bindings", "cuda_pathfinder")
    others = [w for w in sorted(wheels.glob("*.whl")) if not w.name.startswith(cupti_set)]
    if others:  # the rest of the carried wheels, as the other GPU scripts install them
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--target", "/tmp/lead-site", *map(str, others)], capture_output=True)
    if found:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--target", str(SITE), *map(str, found)], capture_output=True)
    check = subprocess.run([sys.executable, "-c", "from cupti import cupti; print('cupti imports; timestamp',"
                            " cupti.get_timestamp())"], capture_output=True, text=True, env=env())
    say(f"wheels from {wheels}: {', '.join(w.name for w in found) or 'none found'}")
    say(f"cupti here: {check.stdout.strip() or (check.stderr.strip().splitlines() or ['?'])[-1]}")


# --- (a) both clocks on the lab's small convolutions ------------------------------------------------------------


def clocks_on_conv_small() -> None:
    say("\n== (a) tools/gpu/lab-small.toml with --clock both")
    path = OUT / "conv-small-clocks.json"
    gpubench("run", "tools/gpu/lab-small.toml", "--clock", "both", "-o", str(path), "--force", quiet=True)
    if path.exists():
        summarise_clocks(path)
    # does recording CUPTI move the events? the same points with the events alone, in the next process
    alone = Path(tempfile.gettempdir()) / "conv-small-events.json"
    gpubench("run", "tools/gpu/lab-small.toml", "--clock", "events", "-o", str(alone), "--force", quiet=True)
    if path.exists() and alone.exists():
        say("events alone (base) against events with CUPTI recording (new):")
        code, text = gpubench("compare", str(alone), str(path), "--format", "json", quiet=True)
        try:
            changes = json.loads(text).get("changes", [])
            ratios = sorted(c["ratio"] for c in changes if c.get("ratio"))
            verdicts = {v: sum(c.get("verdict") == v for c in changes) for v in ("slower", "faster", "same",
                                                                                  "inconclusive")}
            say(f"  median ratio with/without CUPTI {statistics.median(ratios):.4f} over {len(ratios)} points "
                f"(p10 {ratios[len(ratios) // 10]:.4f}, p90 {ratios[9 * len(ratios) // 10]:.4f}); {verdicts}")
        except (json.JSONDecodeError, KeyError, TypeError, statistics.StatisticsError, IndexError) as e:
            say(f"  (compare's JSON not read: {e}); exit {code}")


def summarise_clocks(path: Path) -> None:
    """The events/CUPTI ratio over a run's points: its distribution, per variant, the points past 5%."""
    sys.path.insert(0, str(REPO))
    from gpubench import results
    from gpubench.views import clocks

    run = results.load(path)
    rows = [(p, a) for p in run.points if (a := clocks.of(p)) is not None]
    say(f"points: {len(run.points)}, with both clocks: {len(rows)}; run wall {run.settings.get('wall_s')} s")
    if not rows:
        say("no CUPTI kernel times recorded: " + (clocks.caption(run) or "see above"))
        return
    ratios = sorted(a.ratio for _, a in rows)
    qs = statistics.quantiles(ratios, n=10, method="inclusive") if len(ratios) > 1 else ratios * 9
    say(f"events/CUPTI ratio of medians: min {ratios[0]:.4f}, p10 {qs[0]:.4f}, p25 {statistics.quantiles(ratios, n=4, method='inclusive')[0]:.4f}, "
        f"median {statistics.median(ratios):.4f}, p75 {statistics.quantiles(ratios, n=4, method='inclusive')[2]:.4f}, "
        f"p90 {qs[-1]:.4f}, max {ratios[-1]:.4f}")
    say(f"events minus kernels (µs), median: {statistics.median((a.events_ms - a.kernel_ms) * 1e3 for _, a in rows):.3f}")
    by_variant: dict[str, list] = {}
    for p, a in rows:
        by_variant.setdefault(p.variant, []).append((p, a))
    for variant, items in by_variant.items():
        r = [a.ratio for _, a in items]
        diff = [(a.events_ms - a.kernel_ms) * 1e3 for _, a in items]
        names = sorted({n for p, _ in items for n in p.details.kernels})
        say(f"  {variant}: {len(items)} points, ratio median {statistics.median(r):.4f} (range {min(r):.4f}-{max(r):.4f}),"
            f" events - kernels median {statistics.median(diff):.3f} µs; kernels: {'; '.join(names)[:400]}")
    past = [(p, a) for p, a in rows if a.differ]
    say(f"points whose clocks differ by more than 5%: {len(past)}")
    for p, a in past[:20]:
        say(f"  {p.variant} {p.config} {p.problem.full_label}: events {a.events_ms * 1e3:.3f} µs, kernels "
            f"{a.kernel_ms * 1e3:.3f} µs ({a.ratio:.4f})")


# --- (b) ab against planted slowdowns, and A against A ----------------------------------------------------------


def source(folder: Path, name: str, cycles: int) -> Path:
    path = folder / f"{name}.cu"
    path.write_text(f"#define PLANT_CYCLES {cycles}\n#include \"{HEADER}\"\n")
    return path


def ab(a: Path, b: Path, size: int, *extra: str, out: Path | None = None) -> dict | None:
    code, text = gpubench("ab", "--kernel", f"a={a}:planted_gemm", "--kernel", f"b={b}:planted_gemm",
                          "--args", "A,B,C,M,N,K", "--size", str(size), "--block-size", "16", "--format", "json",
                          "--clock", "both",
                          *extra, quiet=True)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if out is not None:
        out.write_text(text)
    test = data.get("test") or {}
    if None in data["median_ms"]:
        say(f"  no rounds: {data.get('problem_text')}, exit {code}")
        return data
    say(f"  A {data['median_ms'][0] * 1e3:.3f} µs, B {data['median_ms'][1] * 1e3:.3f} µs; median B/A "
        f"{test.get('median', float('nan')):.4f} ({test.get('low', float('nan')):.4f}-{test.get('high', float('nan')):.4f}), "
        f"{len(data['ratios'])} rounds; verdict {data['verdict']}, exit {code}"
        + (f"; by CUPTI {data['kernel_test']['median']:.4f} ({data['kernel_test']['low']:.4f}-"
           f"{data['kernel_test']['high']:.4f})" if data.get("kernel_test") else "; no CUPTI times"))
    return data


def planted() -> None:
    say("\n== (b) gpubench ab: planted slowdowns, then A against A")
    with tempfile.TemporaryDirectory(prefix="planted-") as tmp:
        folder = Path(tmp)
        a = source(folder, "a", 0)
        for label, size, target, guess in PLANTS:
            say(f"-- {label}: size {size}, target +{100 * target:.0f}%; calibration with {guess} cycles")
            first = ab(a, source(folder, f"guess{label}", guess), size, "--rounds", "8", "--max-time", "10")
            share = ((first or {}).get("test") or {}).get("median", 1.0) - 1
            cycles = int(round(guess * target / share)) if share > 0.001 else guess * 4
            say(f"  {guess} cycles added {100 * share:.2f}%: {cycles} cycles for {100 * target:.0f}%")
            ab(a, source(folder, f"b{label}", cycles), size, "--rounds", "40", "--max-time", "40",
               out=OUT / f"ab-{label}.json")
        say("-- A against A (the same file twice), size 256")
        ab(a, a, 256, "--rounds", "40", "--max-time", "40", out=OUT / "ab-aa.json")


# --- (c) one configuration as a CUDA graph ----------------------------------------------------------------------


def graphs() -> None:
    say("\n== (c) --graph 20: the naive GEMM and cuBLAS at 256, sliding and cuDNN at 64² stride 2")
    common = ["--block-sizes", "16", "--clock", "both", "--force"]
    alone, graphed = OUT / "gemm-alone.json", OUT / "gemm-graph.json"
    gpubench("gemm", "--variants", "global,cublas", "--sizes", "256", *common, "-o", str(alone), quiet=True)
    gpubench("gemm", "--variants", "global,cublas", "--sizes", "256", *common, "--graph", "20", "-o", str(graphed),
             quiet=True)
    if alone.exists() and graphed.exists():
        gpubench("compare", str(alone), str(graphed))  # refused: a graph against none (exit 2, one line)
        gpubench("compare", str(alone), str(graphed), "--across")
        gpubench("show", str(graphed))
    conv = OUT / "conv-graph.json"
    gpubench("conv", "--variants", "sliding,cudnn", "--sizes", "64", "--stride", "2", *common, "--graph", "20",
             "-o", str(conv), quiet=True)
    if conv.exists():
        gpubench("show", str(conv))


def main() -> int:
    global LOG
    OUT.mkdir(parents=True, exist_ok=True)
    LOG = open(OUT / "micro.log", "w")
    started = time.perf_counter()
    install_cupti()
    clocks_on_conv_small()
    planted()
    graphs()
    say(f"\nall done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
