"""Snapshots of how each saved run renders (tests/snapshots/results/), for tests/test_saved_runs.py.

A run added to results/ gets its snapshot here once, when it is added: its tables as Markdown (gzip-compressed,
`NAME.md.gz`: the tables of a hundred runs would weigh a tenth of the tree's 10 MB as text; `zcat` reads one) and
the sha256 of its CSV. Existing snapshots are never rewritten (they are what proves that a later change renders old runs as they
were); --force rewrites them, for a change that means to alter what runs show, said so in its commit.

    python3 tools/results_snapshots.py            # snapshots for runs that lack one
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench import results  # noqa: E402
from gpubench.views import run as view  # noqa: E402
from gpubench.views.tables import to_markdown  # noqa: E402

SNAPSHOTS = REPO / "tests" / "snapshots" / "results"
SUFFIX = ".md.gz"  # a run's tables, Markdown, compressed with no time stamp (the same tables give the same bytes)


def main(force: bool = False) -> None:
    hashes_file = SNAPSHOTS / "csv-sha256.json"
    hashes = json.loads(hashes_file.read_text()) if hashes_file.exists() else {}
    for path in results.saved_under(REPO / "results"):
        name = f"{path.parent.name}__{results.run_name(path)}"
        if name in hashes and not force:
            continue
        run = results.load(path)
        tables = "\n".join(to_markdown(t) for t in view.run_tables(run))
        (SNAPSHOTS / f"{name}{SUFFIX}").write_bytes(gzip.compress(tables.encode(), compresslevel=9, mtime=0))
        hashes[name] = hashlib.sha256(view.to_csv(run).encode()).hexdigest()
        print(f"snapshot of {path.relative_to(REPO)}")
    saved = {f"{path.parent.name}__{results.run_name(path)}" for path in results.saved_under(REPO / "results")}
    for name in sorted(set(hashes) - saved):  # a run that left results/ takes its snapshot with it
        del hashes[name]
        (SNAPSHOTS / f"{name}{SUFFIX}").unlink(missing_ok=True)
        print(f"snapshot of {name} removed: its run left results/")
    hashes_file.write_text(json.dumps(hashes, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(force="--force" in sys.argv[1:])
