"""results/README.md indexes every saved run: its table is what tools/results_index.py reads off the files."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("results_index", REPO / "tools" / "results_index.py")
results_index = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_index)


def test_the_index_lists_every_saved_run_as_it_is():
    text = (REPO / "results" / "README.md").read_text()
    committed = text.split(results_index.BEGIN)[1].split(results_index.END)[0].strip()
    assert committed == results_index.table(), "run: python3 tools/results_index.py --write"


def test_every_run_has_its_row():
    rows = results_index.table().splitlines()[2:]
    assert len(rows) == len(results_index.saved_under(REPO / "results")) > 0
