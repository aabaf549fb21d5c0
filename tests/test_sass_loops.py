"""tools/sass_loops.py: a kernel's consumer and producer loops found and counted in an nvdisasm listing (a synthetic
one here; a real build where nvdisasm is at hand)."""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

from gpubench.execution import nvcc

REPO = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("sass_loops", REPO / "tools" / "sass_loops.py")
sass_loops = importlib.util.module_from_spec(spec)
sys.modules["sass_loops"] = sass_loops
spec.loader.exec_module(sass_loops)


def listing(*lines):
    """nvdisasm -c's layout: labels alone on a line, each instruction after its address in a comment."""
    out, address = [], 0x100
    for text in lines:
        if text.endswith(":"):
            out.append(text)
        else:
            out.append(f"        /*{address:04x}*/                   {text} ;")
            address += 0x10
    return "\n".join(out)


SASS = listing(
    "IMAD.MOV.U32 R1, RZ, RZ, RZ",
    ".L_x_1:",  # the consumers' loop: wait, its retry branch, 3 instructions, two wgmmas, the backward branch
    "R2UR UR4, R2",
    ".L_x_9:",
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8+0x38000], R18",
    "@!P0 BRA `(.L_x_8)",
    "IMAD.HI.U32 R3, R4, 0x2aaaaaab, RZ",
    "R2UR UR5, R3",
    "UIADD3 UR6, UR5, 0x2, URZ",
    "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24",
    "HGMMA.64x128x16.F32 R24, gdesc[UR6], R24, gsb0",
    "@!P1 BRA `(.L_x_1)",
    ".L_x_2:",  # the producer's: a division, the wait, a load, the backward branch
    "UIMAD.WIDE.U32 UR8, UR7, UR6, URZ",
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR9+0x38020], R0",
    "@!P0 BRA `(.L_x_7)",
    "UIADD3 UR10, UR9, 0x8000, URZ",
    "UTMALDG.2D [UR10], [UR12]",
    "@!P2 BRA `(.L_x_2)",
    "EXIT",
    ".L_x_8:",  # the try-wait's retry block, which branches back into the loop past the exit: not a loop
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8+0x38000], R18",
    "@!P0 BRA `(.L_x_8)",
    "BRA `(.L_x_9)",
    ".L_x_7:",
    "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR9+0x38020], R0",
    "@!P0 BRA `(.L_x_7)",
    "BRA `(.L_x_3)",  # (a label the listing does not hold: passed over)
)


def test_the_consumer_and_producer_loops_are_found_and_counted():
    counts = sass_loops.describe(SASS)
    assert counts["consumer"] == {"loop": 9, "from wait": 8, "answer to HGMMA": 3, "R2UR": 2, "IMAD": 1,
                                  "divisions": 1, "wgmma": 2, "LDG": 0}
    assert counts["producer"] == {"loop": 6, "from wait": 5, "answer to UTMALDG": 1, "R2UR": 0, "IMAD": 1,
                                  "divisions": 1, "wgmma": 0, "LDG": 0}
    assert counts["kernel"] == 23


def test_an_fp8_consumer_loop_is_found_by_its_qgmma_and_its_global_loads_counted():
    fp8 = SASS.replace("HGMMA.64x128x16.F32", "QGMMA.64x128x32.F32.E4M3.E4M3").replace(
        "UIADD3 UR6, UR5, 0x2, URZ", "LDG.E.CONSTANT R5, desc[UR16][R6.64]")
    counts = sass_loops.describe(fp8)["consumer"]
    assert counts["wgmma"] == 2 and counts["LDG"] == 1 and counts["answer to QGMMA"] == 3


def test_a_retry_block_past_the_exit_is_not_a_loop():
    """The retry block's branch back to the loop is backward, but the body it spans holds the exit: left out, so
    the innermost loop with a wgmma is the loop itself, not the span up to the retry block."""
    assert all(not any(op == "EXIT" for _, op, _ in body) for body in sass_loops.loops(SASS))
    assert min(len(body) for body in sass_loops.loops(SASS)) == 2  # the retry block's own wait loop


NVDISASM = os.environ.get("NVDISASM") or shutil.which("nvdisasm")


@pytest.mark.skipif(nvcc.find_nvcc() is None or NVDISASM is None, reason="needs nvcc and nvdisasm (NVDISASM=...)")
def test_carried_conv_loop_has_no_r2ur_and_a_short_path_after_the_answer(monkeypatch, tmp_path):
    """tc-wgmma-tma's u1 d1 q1 (docs/evidence/tc-conv-tma-carry-sass.md): the plain 256x128 slice loop moves
    descriptors through R2UR and rebuilds them after the full barrier's answer; the carried one does neither."""
    monkeypatch.setenv("NVDISASM", NVDISASM)
    base = {"BM": 256, "BN": 128, "STAGES": 4, "CLUSTER": 1}
    plain = sass_loops.describe(sass_loops.listing("conv", "tc-wgmma-tma", "fp16", base)[1])["consumer"]
    carried = sass_loops.describe(sass_loops.listing("conv", "tc-wgmma-tma", "fp16",
                                                     {**base, "UWG": 1, "CARRY": 1, "PEEK": 1})[1])["consumer"]
    assert plain["R2UR"] > 0 and plain["answer to HGMMA"] > 15
    assert carried["R2UR"] == 0 and carried["answer to HGMMA"] <= 8 and carried["wgmma"] == plain["wgmma"] == 8
