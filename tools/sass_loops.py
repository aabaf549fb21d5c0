"""The SASS of a kernel configuration's main loops: its consumer loop (the innermost loop with a wgmma) and its
producer loop (the innermost one with a TMA load and an mbarrier wait), counted from the listing nvdisasm gives
(the wgmma: HGMMA, fp8's QGMMA or int8's IGMMA; LDG: every global load, LDGSTS's copies included).

    python tools/sass_loops.py conv tc-wgmma-tma fp16 "BM=256,BN=128,STAGES=4,CLUSTER=1" [...] [--save DIR]
    python tools/sass_loops.py gemm wgmma-tma bf16:nn "BN=256,BK=64,STAGES=4,CLUSTER=2,SWIZZLE=8,UWG=1"

For each loop: its instructions (label to backward branch), those from the mbarrier wait on, those between the
wait's answer and the first wgmma (or TMA load), and among the loop's instructions the R2UR moves, the IMADs and the
divisions by values known at run time only (one multiply-high each, with a dozen instructions of corrections). --save DIR keeps each listing (DIR/<variant>-<precision>-<label>.sass) for a diff of two builds.
nvdisasm: $NVDISASM, else on PATH (nvcc 13 does not ship cuobjdump everywhere; the pip wheel nvidia-cuda-nvdisasm
has one). The kernel is compiled as the backend would (gpubench.execution.nvcc, the cache).
"""

import collections
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpubench.specs import parse as specs  # noqa: E402
from gpubench.specs import catalog
from gpubench.execution import nvcc
from gpubench.core.dtypes import DType  # noqa: E402

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
LABEL = re.compile(r"^(\.L_x_\d+):")
TARGET = re.compile(r"`?\((\.L_x_\d+)\)")


def parse(listing: str):
    """[(address, opcode, operands)] and {label: address}."""
    found, labels, pending = [], {}, []
    for line in listing.splitlines():
        if m := LABEL.match(line.strip()):
            pending.append(m.group(1))
        elif m := INSTRUCTION.search(line):
            address = int(m.group(1), 16)
            labels.update(dict.fromkeys(pending, address))
            pending = []
            found.append((address, m.group(3), m.group(4).strip()))
    return found, labels


def loops(listing: str):
    """Each backward branch's body, innermost (shortest) first (not a retry block's branch back past the exit)."""
    found, labels = parse(listing)
    bodies = []
    for address, op, args in found:
        target = TARGET.search(args) if op.startswith("BRA") else None
        start = labels.get(target.group(1), address + 1) if target else address + 1
        if start <= address:
            body = [i for i in found if start <= i[0] <= address]
            if not any(op == "EXIT" for _, op, _ in body):
                bodies.append(body)
    return sorted(bodies, key=len)


WGMMA = ("HGMMA", "QGMMA", "IGMMA")  # wgmma's opcodes: 16-bit, fp8 and int8 inputs


def count(body, start: str):
    """The loop's counts; `start` is the opcode (prefix) whose first instance ends the path after the wait."""
    ops = [op for _, op, _ in body]
    wait = next((k for k, op in enumerate(ops) if op.startswith("SYNCS.PHASECHK")), 0)
    answer = next((k for k in range(wait, len(ops)) if ops[k] == "BRA"), wait)  # the retry branch after it
    first = next((k for k in range(answer, len(ops)) if ops[k].startswith(start)), len(ops))
    return {"loop": len(ops), "from wait": len(ops) - wait, f"answer to {start}": first - answer - 1,
            "R2UR": sum(op == "R2UR" for op in ops), "IMAD": sum(op.startswith(("IMAD", "UIMAD")) for op in ops),
            # one multiply-high a division by a value known only at run time (the reciprocal's), then corrections
            "divisions": sum(op in ("IMAD.HI.U32", "UIMAD.WIDE.U32", "IMAD.WIDE.U32") for op in ops),
            "wgmma": sum(op.startswith(WGMMA) for op in ops),
            "LDG": sum(op.startswith("LDG") for op in ops)}  # global loads (a consumer loop's scales: none wanted)


def describe(listing: str) -> dict:
    bodies = loops(listing)
    consumer = next((b for b in bodies if any(op.startswith(WGMMA) for _, op, _ in b)), [])
    kind = next((op.split(".")[0] for _, op, _ in consumer if op.startswith(WGMMA)), "HGMMA")
    producer = next((b for b in bodies if any(op.startswith("UTMALDG") for _, op, _ in b)
                     and any(op.startswith("SYNCS.PHASECHK") for _, op, _ in b)), [])
    return {"consumer": count(consumer, kind), "producer": count(producer, "UTMALDG"),
            "kernel": len(parse(listing)[0])}


def listing(op: str, name: str, precision: str, values: dict) -> tuple[str, str]:
    variant = catalog.Catalog(catalog.builtin()).get(op, "cuda", name)
    dtype, _, layout = precision.partition(":")
    problem = next(iter(specs.sample_problems(variant)))
    problem = replace(problem, dtype=DType(dtype), **({"layout": type(problem.layout)(layout)} if layout else {}))
    config = variant.space.config(values)
    ((source, defines, arch, includes),) = variant.builds(config, "sm_90a", problem)
    cubin = nvcc.compile_cubin(source, arch, dict(defines), includes=includes)
    tool = os.environ.get("NVDISASM") or shutil.which("nvdisasm") or "nvdisasm"
    return config.label, subprocess.run([tool, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout


def main(args):
    save = Path(args[args.index("--save") + 1]) if "--save" in args else None
    args = [a for k, a in enumerate(args) if a != "--save" and (k == 0 or args[k - 1] != "--save")]
    op, name, precision, *configs = args
    for text in configs:
        values = {k: int(v) for k, v in (kv.split("=") for kv in text.split(","))}
        label, sass = listing(op, name, precision, values)
        if save:
            save.mkdir(parents=True, exist_ok=True)
            (save / f"{name}-{precision.replace(':', '-')}-{label.replace(' ', '_')}.sass").write_text(sass)
        counts = describe(sass)
        print(f"{name} {precision} {label}: {counts['kernel']} instructions")
        for role in ("consumer", "producer"):
            print(f"  {role:<9}", ", ".join(f"{k} {v}" for k, v in counts[role].items()))


if __name__ == "__main__":
    main(sys.argv[1:])
