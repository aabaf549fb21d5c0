"""Every run saved under results/ loads with today's code and renders exactly as it did when it was written
into the snapshots (tests/snapshots/results/: the tables as gzip-compressed Markdown, NAME.md.gz, and the sha256 of
the CSV), so a change to the model, the schema or the views that would alter what a saved run shows fails here."""

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from gpubench import results
from gpubench.views import run as view
from gpubench.views.tables import to_markdown

REPO = Path(__file__).resolve().parent.parent
SNAPSHOTS = REPO / "tests" / "snapshots" / "results"
SAVED = results.saved_under(REPO / "results")
CSV_SHA256 = json.loads((SNAPSHOTS / "csv-sha256.json").read_text())


def snapshot_name(path: Path) -> str:
    return f"{path.parent.name}__{results.run_name(path)}"  # lab-a.json and lab-a.json.gz: one snapshot


def test_every_saved_run_has_a_snapshot():
    """A run added to results/ gets its snapshot when it is added: python3 tools/results_snapshots.py."""
    assert SAVED and {snapshot_name(p) for p in SAVED} == set(CSV_SHA256)
    assert {snapshot_name(p) for p in SAVED} == {p.name.removesuffix(".md.gz") for p in SNAPSHOTS.glob("*.md.gz")}


@pytest.mark.parametrize("path", SAVED, ids=snapshot_name)
def test_saved_run_renders_as_its_snapshot(path):
    run = results.load(path)
    tables = "\n".join(to_markdown(t) for t in view.run_tables(run))
    assert tables == gzip.decompress((SNAPSHOTS / f"{snapshot_name(path)}.md.gz").read_bytes()).decode()
    assert hashlib.sha256(view.to_csv(run).encode()).hexdigest() == CSV_SHA256[snapshot_name(path)]


@pytest.mark.parametrize("path", SAVED, ids=snapshot_name)
def test_saved_run_survives_a_save_and_load(path, tmp_path):
    run = results.load(path)
    assert results.load(results.save(run, tmp_path / "again.json")) == run
