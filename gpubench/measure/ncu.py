"""Nsight Compute (ncu) as gpubench runs it: the one metric set, the command line, and the reading of its output.

The metric set is the table METRICS below, and nowhere else: each row names a metric by a short key (what results
files, views and the limiter use), the ncu metric behind it, and whether it adds up over a call's launches (bytes,
instructions, time) or describes one launch (percentages of peak, registers). Every name was checked against ncu's
output recorded on H100 and H200 under docs/evidence/ (ncu-tc-conv-h100.txt: the tensor pipe, warps active, DRAM
and SM throughput, DRAM bytes; ncu-tf32-tma-l2-sectors.txt and ncu-fp8-h100.txt: L2 bytes, instructions, time),
or against ncu's own rule files (the stall ratios, the local-memory sectors); tools/gpu/profile.sh runs the same set
by hand beside `gpubench profile`, so that a name a GPU rejects is found in one run and corrected here.

ncu prints its details page as text: a line per profiled launch ("  NAME (GRID)x(BLOCK), Context 1, Stream 7,
Device 0, CC 9.0"), then a line per metric ("    NAME  UNIT  VALUE"). gpubench asks for base units (--print-units
base) and still reads scaled ones (Kbyte, Mbyte, us, ...), which is how the recorded outputs under docs/evidence/
print them, so those files serve as the parser's fixtures as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpubench.results.profile import MAX_KERNELS, Gap, Profile


@dataclass(frozen=True)
class Metric:
    key: str  # the short name results files keep
    ncu: str  # ncu's metric
    additive: bool = False  # summed over a call's launches (else: the dominant launch's)
    archs: tuple[str, ...] = ()  # only on these architectures' prefixes ("sm_90"); () on every one
    what: str = ""


STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
                 "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
                 "short_scoreboard", "sleeping", "tex_throttle", "wait")
NOT_STALLS = ("selected", "not_selected")  # a warp that issued, or could have: not a reason it waited
STALL_PREFIX = "stall_"

METRICS: tuple[Metric, ...] = (
    Metric("duration_ns", "gpu__time_duration.sum", True, what="the launch's time on the GPU"),
    Metric("sm_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", what="SM throughput, % of peak"),
    Metric("dram_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed", what="DRAM throughput, % of peak"),
    Metric("l2_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed", what="L2 throughput, % of peak"),
    Metric("occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
           what="achieved occupancy: warps active, % of the SM's maximum"),
    Metric("registers", "launch__registers_per_thread", what="registers a thread"),
    Metric("block", "launch__block_size", what="threads a block"),
    Metric("local_load_sectors", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", True,
           what="local-memory loads, 32-byte sectors (register spills, and local arrays)"),
    Metric("local_store_sectors", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", True,
           what="local-memory stores, 32-byte sectors (register spills, and local arrays)"),
    Metric("tensor_pct", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           what="tensor pipe busy on 16-bit and fp8 matrix ops (HMMA, and Hopper's HGMMA and QGMMA), % of active cycles"),
    Metric("tensor_imma_pct", "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active",
           what="tensor pipe busy on integer matrix ops (IMMA, and Hopper's IGMMA), % of active cycles"),
    Metric("gmma_instructions", "sm__inst_executed_pipe_tensor_op_gmma.sum", True, archs=("sm_90",),
           what="warpgroup matrix instructions (HGMMA, QGMMA, IGMMA, BGMMA) executed: 0 where a kernel uses none"),
    Metric("dram_read_bytes", "dram__bytes_read.sum", True, what="bytes read from DRAM"),
    Metric("dram_write_bytes", "dram__bytes_write.sum", True, what="bytes written to DRAM"),
    Metric("l2_bytes", "lts__t_bytes.sum", True, what="bytes through L2"),
    Metric("instructions", "smsp__inst_executed.sum", True, what="warp instructions executed"),
    *(Metric(STALL_PREFIX + r, f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio",
             what=f"warp cycles per issued instruction stalled on {r.replace('_', ' ')}") for r in STALL_REASONS),
)
BY_NCU = {m.ncu: m for m in METRICS}


def metrics_for(arch: str | None) -> list[Metric]:
    """The set for an architecture ("sm_90"): rows limited to some architectures only where it is one of them."""
    return [m for m in METRICS if not m.archs or (arch and arch.startswith(m.archs))]


def is_launch_attribute(name: str) -> bool:
    """Whether a metric is one of the launch's attributes (launch__registers_per_thread, launch__block_size): read
    from the launch, not counted by the hardware, so `ncu --query-metrics` does not list them, yet every GPU has them
    (an H200's ncu 2025.3.1 gave both: docs/evidence/profile-h200.log.txt.gz)."""
    return name.startswith("launch__")


NVTX_DOMAIN = "gpubench"


def command(ncu: str, arch: str | None, log: str, program: list[str]) -> list[str]:
    """ncu's command line for one point's process: only what the process brackets with cudaProfilerStart/Stop is
    profiled (one timed call, after the warm-up), at the clocks it runs at (--clock-control none: the clocks the
    timing saw), caches flushed before each replay pass as gpubench flushes L2 before each timed call (ncu's
    default --cache-control all), the details page in base units to `log`."""
    return [ncu, "--profile-from-start", "off", "--clock-control", "none", "--nvtx", "--print-units", "base",
            "--metrics", ",".join(m.ncu for m in metrics_for(arch)), "--log-file", log, *program]


# --- reading ncu's output ---------------------------------------------------------------------------------------


@dataclass
class Launch:
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    values: dict[str, float] = field(default_factory=dict)  # ncu metric -> value in base units (bytes, ns)


HEADER = re.compile(r"^  (\S.*?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context \d+, Stream \d+")
ROW = re.compile(r"^\s{3,}([a-z][a-z0-9]*__[A-Za-z0-9_.]+)\s+(?:(\S+)\s+)?(-?[\d,]*\.?\d+(?:[eE][-+]?\d+)?)\s*$")
SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12, "Kibyte": 2**10, "Mibyte": 2**20,
         "Gibyte": 2**30, "ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9,
         "second": 1e9}  # to bytes and nanoseconds (ncu's Kbyte is 1000 bytes: H100's 233,472-byte shared memory
# configuration prints as 233.47 Kbyte in docs/evidence/ncu-tc-gemm-4096.txt)


def parse(text: str) -> list[Launch]:
    """Every profiled launch in ncu's details page, in order, with the metrics it printed for it."""
    launches: list[Launch] = []
    for line in text.splitlines():
        head = HEADER.match(line)
        if head:
            n = [int(g) for g in head.groups()[1:]]
            launches.append(Launch(head[1], (n[0], n[1], n[2]), (n[3], n[4], n[5])))
            continue
        row = ROW.match(line)
        if row and launches:
            unit = row[2] or ""
            scale = SCALE.get(unit.split("/")[0], 1)
            launches[-1].values[row[1]] = float(row[3].replace(",", "")) * scale
    return launches


def version(text: str) -> str | None:
    """ncu's version from `ncu --version` ("Version 2025.3.1.0 (build ...)"), or None."""
    found = re.search(r"Version (\S+)", text)
    return f"ncu {found[1]}" if found else None


# --- why there is no profile ---------------------------------------------------------------------------------------


def refusal(text: str) -> Profile | None:
    """The profile's gap when ncu's log says it could not profile (None where it says no such thing)."""
    if "ERR_NVGPUCTRPERM" in text:
        return Profile.missing(Gap.NOT_PERMITTED, "ncu may not read this GPU's performance counters "
                                                  "(ERR_NVGPUCTRPERM): run as an administrator, or load the driver "
                                                  "with NVreg_RestrictProfilingToAdminUsers=0")
    errors = [_short(line.removeprefix("==ERROR==")) for line in text.splitlines() if line.startswith("==ERROR==")]
    if not errors:
        return None
    if any("Failed to profile" in e or "replay" in e.lower() for e in errors):
        return Profile.missing(Gap.NO_REPLAY, f"ncu could not profile the call's kernel: {errors[0]}")
    return Profile.missing(Gap.FAILED, f"ncu: {errors[0]}")


def _short(line: str) -> str:
    """An error line without ncu's pointer to its documentation ("See https://..."): the reason, in one line."""
    return line.split(" See https://")[0].split(" For instructions")[0].strip()


def profile_from(launches: list[Launch], arch: str | None = None, tool: str | None = None) -> Profile:
    """The call's profile from its launches: the dominant launch's metrics (the longest; for a library, the kernel
    it chose, named by ncu), the additive metrics summed over every launch, and the dominant launch's three
    largest stall reasons."""
    if not launches:
        return Profile.missing(Gap.NO_KERNEL, "ncu profiled no kernel in the bracketed call", tool)
    wanted = metrics_for(arch)
    duration = METRICS[0].ncu
    top = max(launches, key=lambda la: la.values.get(duration, 0.0))
    metrics = {m.key: top.values[m.ncu] for m in wanted
               if m.ncu in top.values and not m.additive and not m.key.startswith(STALL_PREFIX)}
    if duration in top.values:
        metrics["duration_ns"] = top.values[duration]
    totals = {m.key: sum(la.values[m.ncu] for la in launches) for m in wanted
              if m.additive and all(m.ncu in la.values for la in launches)}
    stalls = sorted(((m.key.removeprefix(STALL_PREFIX), top.values[m.ncu]) for m in wanted
                     if m.key.startswith(STALL_PREFIX) and m.ncu in top.values
                     and m.key.removeprefix(STALL_PREFIX) not in NOT_STALLS), key=lambda s: -s[1])[:3]
    names = list(dict.fromkeys(la.name for la in launches))[:MAX_KERNELS]
    return Profile(kernel=top.name, launches=len(launches), kernels=tuple(names), metrics=metrics, totals=totals,
                   stalls=tuple(stalls), tool=tool)
