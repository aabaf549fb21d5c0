"""What limits a point, in words, from its profile (gpubench/results/profile.py): a pure function of the counters.

The rules, in order (percentages are of each unit's sustained peak, as ncu gives them; the launch is the call's
dominant one, its longest kernel):

1. No profile: "not profiled: <why>".
2. Memory: DRAM or L2 throughput at BUSY (60%) or more, and at least the SM's and the tensor pipe's: the unit with the
   larger share is the limit: "memory-bound: DRAM at 91% of peak" or "L2-bound: L2 at 84% of peak".
3. Tensor pipe: busy BUSY or more of the active cycles (HMMA, or Hopper's GMMA, whichever is busier): "tensor pipe
   78%, stalled on barrier".
4. Compute: SM throughput BUSY or more: "compute-bound: SM at 85% of peak, stalled on math pipe throttle".
5. Occupancy: warps active under LOW_OCCUPANCY (25%) of the SM's maximum: "occupancy 12%: 232 registers a thread"
   (the registers named where a thread holds MANY_REGISTERS (128) or more: what usually keeps the warps out).
6. Otherwise latency: no unit near its peak, the warps wait: "latency-bound: SM 31%, DRAM 12% of peak, stalled on
   long scoreboard" (the units whose throughput was counted).
7. Where none of those counters was collected (a GPU or ncu without them): "no throughput counters".

The largest stall reason (of ncu's warp-state ratios, "selected" and "not selected" left out: those warps issued or
could have) is named where rules 3, 4 and 6 apply, and for 5 where no register count explains it. Local-memory
traffic (register spills, or a local array) is added to any of them: "; spills 1.2 MB to local memory".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gpubench.results.profile import Profile

BUSY = 60.0  # % of peak from which a unit is where the time goes (ncu's own rules call under 60% latency-bound)
LOW_OCCUPANCY = 25.0  # % of the SM's warps: fewer leave too few to hide latency
MANY_REGISTERS = 128  # registers a thread from which they are what limits the warps an SM holds
SECTOR_BYTES = 32

STALL_WORDS = {"long_scoreboard": "long scoreboard (global or local memory)",
               "short_scoreboard": "short scoreboard (shared memory, special functions)",
               "mio_throttle": "MIO throttle (shared-memory queue)", "lg_throttle": "LG throttle (global-memory queue)",
               "math_pipe_throttle": "math pipe throttle", "no_instruction": "no instruction (instruction cache)",
               "dispatch_stall": "dispatch", "branch_resolving": "branch resolving", "imc_miss": "constant cache miss",
               "tex_throttle": "texture throttle", "membar": "memory barrier"}


class Limit(StrEnum):
    DRAM = "memory-bound"
    L2 = "L2-bound"
    TENSOR = "tensor pipe"
    COMPUTE = "compute-bound"
    OCCUPANCY = "occupancy"
    LATENCY = "latency-bound"
    UNPROFILED = "not profiled"


@dataclass(frozen=True)
class Verdict:
    limit: Limit
    words: str


def stall_words(reason: str) -> str:
    return STALL_WORDS.get(reason, reason.replace("_", " "))


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def tensor_pct(profile: Profile) -> float | None:
    values = [v for v in (profile.metric("tensor_pct"), profile.metric("tensor_imma_pct")) if v is not None]
    return max(values) if values else None


def verdict(profile: Profile | None) -> Verdict:
    """What limits the profiled call, by the rules above."""
    if profile is None:
        return Verdict(Limit.UNPROFILED, "not profiled")
    if not profile.taken:
        return Verdict(Limit.UNPROFILED, f"not profiled: {profile.reason}")
    m = profile.metric
    counted = {name: m(key) for name, key in (("SM", "sm_pct"), ("DRAM", "dram_pct"), ("L2", "l2_pct"))
               if m(key) is not None}
    sm, dram, l2 = (counted.get(name, 0.0) for name in ("SM", "DRAM", "L2"))
    occ, regs = m("occupancy_pct"), m("registers")
    tensor = tensor_pct(profile) or 0.0
    stall = f"stalled on {stall_words(profile.stalls[0][0])}" if profile.stalls else ""
    memory = max(dram, l2)
    if memory >= BUSY and memory >= sm and memory >= tensor:
        found = Verdict(Limit.DRAM, f"memory-bound: DRAM at {dram:.0f}% of peak") if dram >= l2 else \
            Verdict(Limit.L2, f"L2-bound: L2 at {l2:.0f}% of peak")
    elif tensor >= BUSY:
        found = Verdict(Limit.TENSOR, ", ".join(filter(None, [f"tensor pipe {tensor:.0f}%", stall])))
    elif sm >= BUSY:
        found = Verdict(Limit.COMPUTE, ", ".join(filter(None, [f"compute-bound: SM at {sm:.0f}% of peak", stall])))
    elif occ is not None and occ < LOW_OCCUPANCY:
        why = f": {regs:.0f} registers a thread" if regs is not None and regs >= MANY_REGISTERS else \
            (f", {stall}" if stall else "")
        found = Verdict(Limit.OCCUPANCY, f"occupancy {occ:.0f}%{why}")
    elif counted or tensor_pct(profile) is not None:
        units = ", ".join(f"{name} {x:.0f}%" for name, x in counted.items() if name != "L2") or f"tensor pipe " \
                                                                                                f"{tensor:.0f}%"
        found = Verdict(Limit.LATENCY, ", ".join(filter(None, [f"latency-bound: {units} of peak", stall])))
    else:
        found = Verdict(Limit.LATENCY, ", ".join(filter(None, ["no throughput counters", stall])))
    local = sum(profile.totals.get(k, 0.0) for k in ("local_load_sectors", "local_store_sectors")) * SECTOR_BYTES
    if local > 0:
        found = Verdict(found.limit, f"{found.words}; spills {_bytes(local)} to local memory")
    return found
