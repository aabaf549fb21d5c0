"""The microsecond tools on a GPU: both clocks on the lab's small convolutions, `gpubench ab` against planted
slowdowns and against itself, and one configuration timed as a CUDA graph. Run from the repository root on the GPU
machine, with the cupti-python wheels carried (WHEELS, default .devwheels: cupti_python, nvidia_cuda_cupti,
pyelftools, and cuda_bindings/cuda_pathfinder where the machine lacks them):

    python3 tools/gpu/micro.py            # every section, writes under $OUT
    python3 tools/gpu/micro.py b          # one section (or several: a c)

(a) tools/gpu/lab-small.toml (the lab's 132 conv-small points) with --clock both: the distribution of each point's
    events/CUPTI ratio of medians, per variant, the points past 5%, and the kernels cuBLAS and cuDNN ran; then the
    same points with the events alone, compared: whether recording CUPTI moves the events. About 1 minute.
(b) `gpubench ab` on tools/gpu/planted/planted_gemm.cuh: the same naive GEMM as A, and as B with every block first
    waiting PLANT_CYCLES SM cycles. First, one quick gemm run of A picks the sizes whose call is nearest ~10 µs
    (96 to 160) and ~1 ms (1280, 1344 or 1408). Then, for each plant:
    - Short A/Bs (40 rounds, at most 8 s) measure the share the cycles add, from a first guess and then up to three
      secant steps, until it is within ±25% of the target: 2% at ~10 µs, 1% at ~1 ms. (The wait per block is not
      linear in cycles: blocks overlap it.)
    - The A/B then runs with ab's defaults: one process of at most a minute, whose verdict should be `slower`
      (exit 1).
    Last, A against a copy of its own source file, loaded as a second module, at the ~10 µs size with the defaults:
    `same` (exit 0). Each A/B's rounds are summarised: quartiles, the median by which side went first, and the
    rounds past ±1%. The block layout's A/A had most of its rounds there (docs/evidence/ab-aa-blocks-h200.txt).
    About 4-5 minutes.
(c) the naive GEMM and cuBLAS at 256, and the sliding convolution and cuDNN at 64² stride 2, timed alone and as a
    CUDA graph of 20 calls (--graph 20, with both clocks), shown side by side with `compare --across`. About
    half a minute.

Files: micro.log (everything printed), conv-small-clocks.json, sizes.json, ab-10us.json, ab-1ms.json, ab-aa.json
(each A/B's JSON keeps every round's order and both sides' samples), gemm-alone.json, gemm-graph.json,
conv-graph.json.
"""

from __future__ import annotations

import json
import math
import os
import shutil
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
# candidate sizes, target ms: on an H200 the naive GEMM ran 16 µs at 160, the smallest size once offered, so the
# 10 µs plant reaches down to 96
SIZES = {"10us": ((96, 112, 128, 144, 160), 0.010), "1ms": ((1280, 1344, 1408), 1.0)}
FALLBACK = {"10us": 176, "1ms": 1344}  # where the quick timing gave nothing
PLANTS = [("10us", 0.02, 400), ("1ms", 0.01, 8000)]  # label, target share, first guess (cycles)
SECANT_STEPS = 3  # calibration steps after the first guess, at most ...
CLOSE = 0.25  # ... until the measured share is within this fraction of the target


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


def pick_sizes(a: Path) -> dict[str, int]:
    """The candidate size of each plant whose unplanted call is nearest its target time (log scale), from one quick
    gemm run of the A source; FALLBACK where a size was not measured."""
    path = OUT / "sizes.json"
    every = [size for sizes, _ in SIZES.values() for size in sizes]
    gpubench("gemm", "--kernel", f"a={a}:planted_gemm", "--args", "A,B,C,M,N,K", "--sizes", ",".join(map(str, every)),
             "--block-sizes", "16", "--reps", "20", "-o", str(path), "--force", quiet=True)
    ms = {}
    if path.exists():
        sys.path.insert(0, str(REPO))
        from gpubench import results

        ms = {p.problem.m: p.median_ms for p in results.load(path).points if p.variant == "a" and p.median_ms}
    say("  unplanted call by size: " + (", ".join(f"{n}: {ms[n] * 1e3:.2f} µs" for n in sorted(ms)) or "none timed"))
    chosen = {}
    for label, (sizes, target_ms) in SIZES.items():
        timed = [n for n in sizes if n in ms]
        chosen[label] = min(timed, key=lambda n: abs(math.log(ms[n] / target_ms))) if timed else FALLBACK[label]
        say(f"  {label}: size {chosen[label]}" + (f" ({ms[chosen[label]] * 1e3:.2f} µs)" if timed else " (fallback)"))
    return chosen


def ab(a: Path, b: Path, size: int, *extra: str, out: Path | None = None) -> dict | None:
    """`gpubench ab` of two sources at `size` (its defaults, but for `extra`): its JSON, summarised in the log."""
    code, text = gpubench("ab", "--kernel", f"a={a}:planted_gemm", "--kernel", f"b={b}:planted_gemm",
                          "--args", "A,B,C,M,N,K", "--size", str(size), "--block-size", "16", "--format", "json",
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
        f"{test.get('median', float('nan')):.4f} ({test.get('low', float('nan')):.4f}-"
        f"{test.get('high', float('nan')):.4f}), {len(data['ratios'])} rounds; verdict {data['verdict']}, exit {code}")
    return data


def rounds_summary(data: dict | None) -> None:
    """The rounds' ratios of an A/B: quartiles, by which side went first, and how many lie past ±1% (the block
    layout's A/A on an H200 had most of its rounds near 0.98 or 1.02: docs/evidence/ab-aa-blocks-h200.txt)."""
    rounds = (data or {}).get("rounds") or []
    if len(rounds) < 4:
        return
    ratios = [r["ratio"] for r in rounds]
    q1, q2, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    by = {o: [r["ratio"] for r in rounds if r["order"] == o] for o in ("AB", "BA")}
    say(f"  rounds' B/A: quartiles {q1:.4f} {q2:.4f} {q3:.4f}, range {min(ratios):.4f}-{max(ratios):.4f}; median AB "
        f"{statistics.median(by['AB']):.4f}, BA {statistics.median(by['BA']):.4f}; past ±1%: "
        f"{sum(abs(r - 1) > 0.01 for r in ratios)} of {len(ratios)}; samples per side per round "
        f"{statistics.median(len(r['a_ms']) for r in rounds):.0f}")
    say("  first 40 rounds: " + " ".join(f"{r['order']}:{r['ratio']:.4f}" for r in rounds[:40]))


def share_of(a: Path, folder: Path, label: str, size: int, cycles: int) -> float | None:
    """The share a plant of `cycles` adds to the call at `size`: a short A/B's median ratio − 1."""
    data = ab(a, source(folder, f"{label}-{cycles}", cycles), size, "--rounds", "40", "--max-time", "8")
    median = ((data or {}).get("test") or {}).get("median")
    return None if median is None else median - 1


def calibrate(a: Path, folder: Path, label: str, size: int, target: float, guess: int) -> int:
    """Cycles whose share lands within CLOSE of `target`: the first guess, then up to SECANT_STEPS secant steps
    (the first scaled in proportion); the wait per block is not linear in cycles (blocks overlap it). The cycles
    whose share came nearest, where none landed within CLOSE."""
    tried: list[tuple[int, float]] = []
    cycles = guess
    for step in range(1 + SECANT_STEPS):
        share = share_of(a, folder, label, size, cycles)
        say(f"  step {step}: {cycles} cycles added {100 * share:.2f}%" if share is not None else
            f"  step {step}: {cycles} cycles: no ratio")
        if share is None:
            break
        tried.append((cycles, share))
        if abs(share - target) <= CLOSE * target:
            return cycles
        if len(tried) >= 2 and tried[-1][1] != tried[-2][1]:
            (c0, s0), (c1, s1) = tried[-2], tried[-1]
            step_to = c1 + (target - s1) * (c1 - c0) / (s1 - s0)
        else:
            step_to = cycles * target / share if share > 0.001 else cycles * 4
        cycles = int(round(min(max(step_to, cycles / 4), cycles * 4, 10 ** 7)))
        cycles = max(1, cycles)
    if not tried:
        return guess
    best = min(tried, key=lambda t: abs(t[1] - target))
    say(f"  none within ±{100 * CLOSE:.0f}% of the target: the nearest, {best[0]} cycles ({100 * best[1]:.2f}%)")
    return best[0]


def planted() -> None:
    say("\n== (b) gpubench ab: planted slowdowns, then A against A (two copies of one source)")
    with tempfile.TemporaryDirectory(prefix="planted-") as tmp:
        folder = Path(tmp)
        a = source(folder, "a", 0)
        sizes = pick_sizes(a)
        for label, target, guess in PLANTS:
            size = sizes[label]
            say(f"-- {label}: size {size}, target +{100 * target:.0f}%; calibration from {guess} cycles")
            cycles = calibrate(a, folder, label, size, target, guess)
            say(f"-- {label}: the A/B with ab's defaults, {cycles} cycles planted")
            rounds_summary(ab(a, source(folder, f"b{label}", cycles), size, out=OUT / f"ab-{label}.json"))
        copy = folder / "a-copy.cu"
        shutil.copyfile(a, copy)  # the same source in a second file: a second module, loaded on its own
        say(f"-- A against A (a.cu and a copy of it), size {sizes['10us']}, ab's defaults")
        rounds_summary(ab(a, copy, sizes["10us"], out=OUT / "ab-aa.json"))


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


SECTIONS = {"a": lambda: clocks_on_conv_small(), "b": lambda: planted(), "c": lambda: graphs()}


def main(argv: list[str]) -> int:
    global LOG
    asked = argv or list(SECTIONS)
    if not set(asked) <= set(SECTIONS):
        print(f"micro.py: sections are {', '.join(SECTIONS)} (none: all of them), got {' '.join(asked)}")
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    LOG = open(OUT / "micro.log", "w")
    started = time.perf_counter()
    install_cupti()
    for section in asked:
        SECTIONS[section]()
    say(f"\nall done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
