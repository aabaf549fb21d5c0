"""Which GPUs a run uses: `--gpus` as a typed selection instead of a string code.

  all      every GPU of the machine (one Dask worker each)
  N        the first N GPUs
  0,2      these GPUs, by index (CUDA_VISIBLE_DEVICES numbering)
  id:1     this one GPU (any, not only the first), without Dask: one worker process on it

A selection is parsed once, from the command line or a suite, and travels as this type; a run records it as the
text it was given in (str()).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.core.errors import GpubenchError

ALL = "all"
ONE = "id:"  # the prefix that picks GPUs by index, one of them included
CPU_WORKERS = 2  # --gpus all on the CPU backend (which has no GPUs to count): this many worker processes
MAX_GPUS = 256  # no host has more; a larger count or index is a typo (and would start that many processes)


@dataclass(frozen=True)
class GpuSelection:
    count: int | None = None  # the first `count` GPUs ...
    indices: tuple[int, ...] | None = None  # ... or these; neither: all of them

    def __post_init__(self):
        if self.count is not None and self.indices is not None:
            raise ValueError("a GPU selection is a count or a list of indices, not both")
        if self.count is not None and self.count < 1:
            raise GpubenchError(f"--gpus {self.count}: a count is at least 1")
        if self.indices is not None and (not self.indices or len(set(self.indices)) != len(self.indices)):
            raise GpubenchError(f"--gpus {self}: give each index once")

    @classmethod
    def parse(cls, text: str) -> GpuSelection:
        text = str(text).strip()
        if text == ALL:
            return cls()
        by_index = text.startswith(ONE)
        items = [t.strip() for t in text.removeprefix(ONE).split(",")]
        if not all(t.isascii() and t.isdigit() and len(t) < 10 for t in items):  # isdigit alone takes ² and ٣
            raise GpubenchError(f"--gpus {text!r}: give all, a count such as 2, indices such as 0,2, or one GPU by "
                                "index such as id:1")
        values = tuple(int(t) for t in items)
        if max(values) > MAX_GPUS - (by_index or len(values) > 1):
            raise GpubenchError(f"--gpus {text!r}: a count is 1 to {MAX_GPUS}, an index 0 to {MAX_GPUS - 1}")
        if len(values) == 1 and not by_index:
            return cls(count=values[0])
        return cls(indices=values)

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        if self.indices is None:
            return ALL
        text = ",".join(str(i) for i in self.indices)
        return ONE + text if len(self.indices) == 1 else text

    @property
    def single(self) -> str | None:
        """The one GPU's index where exactly one was chosen by index (a worker process of its own, no Dask)."""
        return str(self.indices[0]) if self.indices is not None and len(self.indices) == 1 else None

    def visible(self, available: int | None) -> str | None:
        """The CUDA_VISIBLE_DEVICES list (None: every GPU); `available` is the machine's count, where known."""
        if self.count is not None:
            if available is not None and self.count > available:
                raise GpubenchError(f"--gpus {self.count}: this machine has {available} GPU(s)")
            return ",".join(str(i) for i in range(self.count))
        if self.indices is not None:
            return ",".join(str(i) for i in self.indices)
        return None

    def workers(self) -> int:
        """How many worker processes the CPU backend starts for this selection."""
        if self.count is not None:
            return self.count
        return len(self.indices) if self.indices is not None else CPU_WORKERS
