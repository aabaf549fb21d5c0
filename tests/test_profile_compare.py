"""tools/gpu/profile_compare.py: ncu's raw CSV by hand (one block a call) read on its own and set beside
gpubench's saved profile (a synthetic CSV in the layout of `ncu --csv --page raw`: a header row, a units row, a row
per launch; tools/gpu/profile.sh records real ones)."""

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

from gpubench import results
from gpubench.measure import ncu

REPO = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("profile_compare", REPO / "tools" / "gpu" / "profile_compare.py")
compare = importlib.util.module_from_spec(spec)
sys.modules["profile_compare"] = compare
spec.loader.exec_module(compare)

RAW = '''# call cublas -
==PROF== Connected to process 1 (/usr/bin/python3)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","dram__bytes_read.sum"
"","","","","","","","","","","","nsecond","%","byte"
"0","1","python3","127.0.0.1","splitk_reduce","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","1,000","20.00","100"
"1","1","python3","127.0.0.1","nvjet_main","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","175010","90.03","1000"
'''


def test_the_raw_csv_is_read_call_by_call(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text(RAW)
    calls = compare.blocks(str(path))
    assert list(calls) == [("cublas", "-")] and len(calls[("cublas", "-")]) == 2
    kernel, metrics, totals = compare.by_hand(calls[("cublas", "-")])
    assert kernel == "nvjet_main" and metrics["sm_pct"] == 90.03
    assert totals["duration_ns"] == 176_010 and totals["dram_read_bytes"] == 1100


def test_a_page_without_a_units_row_keeps_its_first_launch(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text("\n".join(line for line in RAW.splitlines() if not line.startswith('"","')))
    assert len(compare.blocks(str(path))[("cublas", "-")]) == 2


def test_agreement_is_counted_against_the_saved_profile(tmp_path, make_run, capsys):
    path = tmp_path / "raw.csv"
    path.write_text(RAW)
    run = make_run()
    launches = [ncu.Launch("splitk_reduce", (64, 1, 1), (256, 1, 1), {"gpu__time_duration.sum": 1000.0,
                "sm__throughput.avg.pct_of_peak_sustained_elapsed": 20.0, "dram__bytes_read.sum": 100.0}),
                ncu.Launch("nvjet_main", (132, 1, 1), (384, 1, 1), {"gpu__time_duration.sum": 175010.0,
                "sm__throughput.avg.pct_of_peak_sustained_elapsed": 89.0, "dram__bytes_read.sum": 1000.0})]
    profile = ncu.profile_from(launches, "sm_90")
    run.points = [replace(p, details=replace(p.details, profile=profile)) if p.variant == "cublas" else p
                  for p in run.points]
    saved = results.save(run, tmp_path / "p.json")
    assert compare.main([str(saved), str(path)]) == 0  # 89 against 90.03: 1.1%, within 2%
    out = capsys.readouterr().out
    assert "sm_pct" in out and "1.14%" in out
    assert "8 of 8 metrics agree within 2%" in out  # two cuBLAS points: SM, time, and the two totals each
    run.points = [replace(p, details=replace(p.details, profile=replace(profile, metrics={**profile.metrics,
                                                                                         "sm_pct": 80.0})))
                  if p.variant == "cublas" else p for p in run.points]
    assert compare.main([str(results.save(run, tmp_path / "p.json")), str(path)]) == 1
    assert "6 of 8 metrics agree" in capsys.readouterr().out
