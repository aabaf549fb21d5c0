"""The index of the saved runs under results/: one row per file, read from the file itself.

    python3 tools/results_index.py            # print the table
    python3 tools/results_index.py --write    # rewrite the table in results/README.md

tests/test_results_index.py fails while results/README.md's table differs from what this prints, so a run
added (or changed) without its index row is caught in CI. It reads the raw JSON rather than the results model
on purpose: the index names what each file holds as written, whichever schema version it has.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench.results import decompressed, saved_under  # noqa: E402

RESULTS = REPO / "results"
BEGIN, END = "<!-- index: begin -->", "<!-- index: end -->"


def row(path: Path) -> str:
    run = json.loads(decompressed(path.read_bytes()))
    env = run.get("environment", {})
    software = env.get("software", {})
    command = " ".join(run.get("command", [])[1:]) or "-"
    command = command.split(" -o ")[0]  # where the device wrote it is not part of what ran
    commit = (software.get("git_commit") or "-")[:9]
    statuses = {}
    for point in run.get("points", []):
        statuses[point.get("status")] = statuses.get(point.get("status"), 0) + 1
    points = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none"
    return (f"| `{path.relative_to(RESULTS).as_posix()}` | {env.get('device', {}).get('name', '-')} | "
            f"`{command}` | {commit} | {run.get('gpubench_version', '-')} | {run.get('schema_version', '-')} | "
            f"{run.get('status', '-')} | {points} | {run.get('created', '-')[:16]} |")


def table() -> str:
    rows = [row(p) for p in saved_under(RESULTS)]
    head = ("| file | GPU | command | commit | gpubench | schema | status | points | started (UTC) |\n"
            "|---|---|---|---|---|---|---|---|---|")
    return "\n".join([head, *rows])


def write() -> None:
    readme = RESULTS / "README.md"
    text = readme.read_text()
    before, _, rest = text.partition(BEGIN)
    _, _, after = rest.partition(END)
    readme.write_text(f"{before}{BEGIN}\n{table()}\n{END}{after}")


if __name__ == "__main__":
    write() if "--write" in sys.argv[1:] else print(table())
