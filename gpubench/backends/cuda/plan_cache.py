"""cuDNN's plan choices, kept from one run to the next: the fastest plan a search found for a convolution on this
device and cuDNN, reused by later runs instead of searching again (as a framework's autotuning cache does).

Why: near the launch floor two of cuDNN's plans can be within a few percent of each other (the H100 lab's
7-8 µs layers: eng70 and eng28), and a search in each process picked one or the other; `compare` then saw a
different engine, 5-13% apart, as a change in cuDNN. With the choice kept, a second run times the same engine
(a run's points name it: details.engine, and details.engine_kept names this file when it came from here), and it
skips the search (about 8 s of the lab).

One file per device and cuDNN version, under the cache directory (GPUBENCH_CACHE moves it; delete the file, or
the directory, for a fresh search). A file that cannot be read or written is no reason to fail a run: the search
runs as if it were empty.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpubench.core import paths


class PlanCache:
    """Engine names by problem, read once and rewritten whole (atomically) after each new choice."""

    def __init__(self, path: Path):
        self.path = path
        self._entries: dict[str, str] | None = None

    @classmethod
    def for_device(cls, device_name: str, cudnn_version: str | None) -> PlanCache:
        device = paths.slug(device_name, fallback="unknown")
        name = f"{device}--cudnn-{paths.slug(cudnn_version or '', keep='.', fallback='unknown')}.json"
        return cls(paths.cache_dir() / "cudnn-plans" / name)

    @staticmethod
    def key(problem: dict) -> str:
        return json.dumps(problem, sort_keys=True, separators=(",", ":"))

    def entries(self) -> dict[str, str]:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_text())
                self._entries = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} \
                    if isinstance(data, dict) else {}
            except (OSError, ValueError, RecursionError):
                self._entries = {}
        return self._entries

    def get(self, problem: dict) -> str | None:
        return self.entries().get(self.key(problem))

    def put(self, problem: dict, engine: str) -> None:
        entries = self.entries()
        entries[self.key(problem)] = engine
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = paths.temporary(self.path)
            tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written only means the next run searches again
