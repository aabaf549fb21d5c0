#!/usr/bin/env python3
"""A small mutation run: one-line bugs planted one at a time in a scratch copy of the checkout, each followed by the
test files that should catch it; the score is how many they killed.

The mutations live in tools/mutations.toml, each a line's text (`find`) and what it becomes (`replace`) in one file:
matched by text, not by line number, so that a module moved or split needs only its `file` changed. A mutation
whose text is no longer found is reported as such (to be re-pointed), never counted as killed.

    python tools/mutate.py                      # every mutation of the `core` group, sequentially
    python tools/mutate.py --group battery      # bugs planted for the property batteries (their default profile)
    python tools/mutate.py --only bonferroni    # the mutations whose name contains this (a,b: either)
    python tools/mutate.py --list               # what would run, with the tests of each

A mutation is killed when its tests fail (pytest's exit 1) or stop with an error (a collection error, a timeout:
said so in the line); it survives when they pass. Before any mutation the tests of every selected one run on the
unmutated copy: a failing baseline stops the run, since it would kill everything.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MUTATIONS = Path(__file__).with_name("mutations.toml")
SKIP = shutil.ignore_patterns(".git", ".venv", ".ci-venv", "build", "dist", "*.egg-info", "__pycache__",
                              ".pytest_cache", ".hypothesis", "site")


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    group: str = "core"
    why: str = ""


@dataclass
class Outcome:
    mutation: Mutation
    verdict: str  # killed, survived, not found
    seconds: float = 0.0
    detail: str = ""
    failed: list[str] = field(default_factory=list)


def load(path: Path = MUTATIONS) -> list[Mutation]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tests = data.get("tests", {})
    out = []
    for m in data["mutation"]:
        out.append(Mutation(name=m["name"], file=m["file"], find=m["find"], replace=m["replace"],
                            tests=tuple(m.get("tests") or tests[m["file"]]), group=m.get("group", "core"),
                            why=m.get("why", "")))
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise SystemExit(f"{path}: a mutation name is given twice")
    return out


def mutated(text: str, m: Mutation) -> str | None:
    """The file's text with the mutation applied, or None where `find` is not in it exactly once."""
    if text.count(m.find) != 1:
        return None
    return text.replace(m.find, m.replace, 1)


def pytest(root: Path, tests: tuple[str, ...], extra: list[str], timeout: float) -> tuple[int | None, str]:
    """Run the tests in the copy (its gpubench imported, one process, stopping at the first failure)."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("GPUBENCH_CACHE", None)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", "-rfE",
           *extra, *tests]
    try:
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    return p.returncode, p.stdout + p.stderr


def failures(output: str) -> list[str]:
    return [line.split(" ", 1)[1].split(" - ")[0] for line in output.splitlines()
            if line.startswith(("FAILED ", "ERROR "))]


def run_one(root: Path, m: Mutation, extra: list[str], timeout: float) -> Outcome:
    target = root / m.file
    if not target.is_file():
        return Outcome(m, "not found", detail=f"{m.file} does not exist")
    original = target.read_text(encoding="utf-8")
    changed = mutated(original, m)
    if changed is None:
        return Outcome(m, "not found", detail=f"the text is in {m.file} {original.count(m.find)} times, not once")
    target.write_text(changed, encoding="utf-8")
    started = time.monotonic()
    try:
        code, output = pytest(root, m.tests, extra, timeout)
    finally:
        target.write_text(original, encoding="utf-8")
    seconds = time.monotonic() - started
    if code == 0:
        return Outcome(m, "survived", seconds)
    detail = {None: "timed out", 1: ""}.get(code, f"pytest exit {code} (an error, not a failed test)")
    return Outcome(m, "killed", seconds, detail, failures(output))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--group", default="core", help="core (the default), battery, or all")
    ap.add_argument("--only", default=None, help="only the mutations whose name contains this (or one of these, "
                                                 "comma-separated)")
    ap.add_argument("--list", action="store_true", help="list the mutations and their tests, run nothing")
    ap.add_argument("--timeout", type=float, default=600, help="seconds for one mutation's tests (then killed)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the tests")
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest after --, e.g. -- --hypothesis-profile=full")
    args = ap.parse_args(argv)
    chosen = [m for m in load() if args.group in ("all", m.group) and (not args.only or any(w in m.name for w in args.only.split(",")))]
    if not chosen:
        print("no mutation selected", file=sys.stderr)
        return 2
    if args.list:
        for m in chosen:
            path = REPO / m.file
            found = path.is_file() and mutated(path.read_text(encoding="utf-8"), m) is not None
            print(f"{m.name:28} {'' if found else 'NOT FOUND '}{m.file}: {m.find.strip()!r} -> "
                  f"{m.replace.strip()!r}  [{' '.join(m.tests)}]")
        return 0
    with tempfile.TemporaryDirectory(prefix="gpubench-mutate-") as scratch:
        root = Path(scratch) / "repo"
        shutil.copytree(REPO, root, ignore=SKIP, symlinks=True)
        if not args.no_baseline:
            suites = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
            code, output = pytest(root, suites, args.pytest_args, args.timeout * 2)
            if code != 0:
                print(output[-3000:])
                print(f"the unmutated tests do not pass (exit {code}): no score", file=sys.stderr)
                return 2
            print(f"baseline: {' '.join(suites)} pass", flush=True)
        outcomes = []
        for i, m in enumerate(chosen, 1):
            o = run_one(root, m, args.pytest_args, args.timeout)
            outcomes.append(o)
            caught = f" by {o.failed[0]}" if o.failed else ""
            note = f" ({o.detail})" if o.detail else ""
            print(f"[{i}/{len(chosen)}] {o.verdict:9} {m.name}{caught}{note}  {o.seconds:.0f} s", flush=True)
    scored = [o for o in outcomes if o.verdict != "not found"]
    killed = sum(o.verdict == "killed" for o in scored)
    print(f"\nscore: {killed}/{len(scored)} killed" + (f" ({killed / len(scored):.0%})" if scored else ""))
    for o in outcomes:
        if o.verdict != "killed":
            m = o.mutation
            print(f"  {o.verdict}: {m.name}  {m.file}: {m.find.strip()!r} -> {m.replace.strip()!r}"
                  + (f"  ({o.detail})" if o.detail else ""))
    return 0 if killed == len(scored) else 1


if __name__ == "__main__":
    sys.exit(main())
