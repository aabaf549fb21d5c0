"""The repository stays a product, not a lab notebook: every saved run under results/ is compressed and cited by a
documentation page or a test, and the tracked files weigh at most 10 MB (every clone, CI run and transfer to a GPU
machine pays for each byte)."""

import fnmatch
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
KEPT_BESIDE_RUNS = {"README.md"}  # the index of the runs (tools/results_index.py writes its table)
MAX_TRACKED_BYTES = 10_000_000
CITED_NAME = re.compile(r"[\w*<>/.-]+\.json(?:\.gz)?")  # lab-a.json.gz, results/<gpu>/kernels-*.json


def citing_texts() -> list[Path]:
    """Where a run may be cited: the README, the documentation and the tests (not the snapshots, which name every
    run because it exists)."""
    docs = [p for p in (REPO / "docs").rglob("*") if p.is_file() and p.suffix in {".md", ".txt", ".yml", ".py"}]
    tests = [p for p in (REPO / "tests").rglob("*.py") if "snapshots" not in p.parts]
    return [REPO / "README.md", *docs, *tests]


def cited_names(texts: list[Path]) -> set[str]:
    return {m.group(0) for p in texts for m in CITED_NAME.finditer(p.read_text(errors="replace"))}


def is_cited(run: Path, names: set[str]) -> bool:
    """By its file name or the name it had before compression (its stem and .json), alone or with its folders, or
    by a glob such as `results/<gpu>/tc-conv-14-s33-r*.json` that matches it. A folder in the citation must be the
    run's GPU folder; a glob whose name starts with `*` cites nothing (it names no run)."""
    own = {run.name, run.name.removesuffix(".gz")}
    for name in names:
        *folders, base = name.replace("<gpu>", "*").split("/")
        if base.startswith("*") or not any(fnmatch.fnmatchcase(o, base) for o in own):
            continue
        if not folders or folders[-1] in {"", "results"} or fnmatch.fnmatchcase(run.parent.name, folders[-1]):
            return True
    return False


def saved_files() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*") if p.is_file())


def test_every_saved_run_is_compressed():
    loose = [p.relative_to(REPO).as_posix() for p in saved_files()
             if p.name not in KEPT_BESIDE_RUNS and not p.name.endswith(".json.gz")]
    assert saved_files() and not loose, f"gzip these (gpubench reads .json.gz as it reads .json): {loose}"


def test_every_saved_run_is_cited_by_a_page_or_a_test():
    names = cited_names(citing_texts())
    uncited = [p.relative_to(REPO).as_posix() for p in saved_files()
               if p.name not in KEPT_BESIDE_RUNS and not is_cited(p, names)]
    assert not uncited, f"no page or test cites these (cite them, or leave them to git history): {uncited}"


def test_citation_means_the_name_itself_not_a_word_or_a_bare_glob():
    lab_a = RESULTS / "nvidia-h200" / "lab-a.json.gz"
    assert not is_cited(lab_a, cited_names([]))
    assert not is_cited(lab_a, {"*.json", "results/*/*.json", "lab.json", "a.json", "nvidia-h100-80gb-hbm3/lab-a.json"})
    assert is_cited(lab_a, {"lab-a.json"}) and is_cited(lab_a, {"results/nvidia-h200/lab-a.json.gz"})
    assert is_cited(lab_a, {"results/<gpu>/lab-*.json"}) and is_cited(lab_a, {"nvidia-h200/lab-a.json"})
    rounds = {"tc-conv-14-s33-r*.json"}
    assert is_cited(Path("tc-conv-14-s33-r3.json.gz"), rounds) and not is_cited(Path("tc-conv-15-r3.json.gz"), rounds)


def tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip(f"git ls-files failed: {listed.stderr.decode(errors='replace').strip()}")
    return [REPO / name for name in listed.stdout.decode().split("\0") if name]


def test_the_tracked_files_weigh_at_most_10_mb():
    files = [p for p in tracked_files() if p.is_file()]  # a tracked file deleted in the work tree weighs nothing
    weight = sum(p.stat().st_size for p in files)
    heaviest = sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:5]
    assert weight <= MAX_TRACKED_BYTES, (
        f"{weight / 1e6:.1f} MB tracked, over {MAX_TRACKED_BYTES / 1e6:.0f} MB; heaviest: "
        + ", ".join(f"{p.relative_to(REPO).as_posix()} ({p.stat().st_size / 1e6:.1f} MB)" for p in heaviest))
