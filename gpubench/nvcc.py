"""Compiling cuda_src/ kernels with nvcc, cached on disk.

Kernels are compiled ahead of loading (nvcc → cubin for the device's own architecture) rather than through
PyCUDA's SourceModule, for three reasons: the cache key is ours (source, headers, defines, arch, nvcc
version), so a second run compiles nothing; a compile error is reported as nvcc's own message and the file;
and CI, which has nvcc but no GPU, compiles every kernel with the very same function.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpubench.errors import CompileError, GpubenchError

NVCC_FLAGS = ("-O3", "-lineinfo", "-std=c++17")


def cuda_src_dir() -> Path:
    override = os.environ.get("GPUBENCH_CUDA_SRC")
    return Path(override) if override else Path(__file__).resolve().parent.parent / "cuda_src"


def cache_dir() -> Path:
    override = os.environ.get("GPUBENCH_CACHE")
    base = Path(override) if override else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpubench"
    return base / "kernels"


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and Path(root, "bin", "nvcc").is_file():
            return str(Path(root, "bin", "nvcc"))
    return None


@functools.lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"release [\d.]+, V[\d.]+", out)
    return match.group(0) if match else out.strip().splitlines()[-1] if out.strip() else "unknown"


def arch_flag(arch: str) -> list[str]:
    """'sm_90' → -arch=sm_90; 'sm_90a' (wgmma, setmaxnreg) needs the -gencode spelling to skip a plain pass."""
    if arch.endswith("a"):
        num = arch[3:]
        return [f"-gencode=arch=compute_{num},code={arch}"]
    return [f"-arch={arch}"]


def _command(nvcc: str, source: Path, arch: str, defines: dict, out: Path, extra=()) -> list[str]:
    flags = [f"-D{k}={v}" for k, v in sorted(defines.items())]
    return [nvcc, "-cubin", *arch_flag(arch), *NVCC_FLAGS, *flags, *extra, "-o", str(out), str(source)]


def _key(nvcc: str, source: Path, arch: str, defines: dict) -> str:
    h = hashlib.sha256()
    # The kernel and every header beside it (kernels include shared cores such as register_tile.cuh).
    for path in [source, *sorted(source.parent.glob("*.cuh"))]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(repr((arch, sorted(defines.items()), NVCC_FLAGS, nvcc_version(nvcc))).encode())
    return h.hexdigest()[:24]


def _require_nvcc() -> str:
    nvcc = find_nvcc()
    if not nvcc:
        raise GpubenchError("nvcc not found: install the CUDA toolkit or put nvcc on PATH (or set CUDA_HOME)")
    return nvcc


def _describe(source: Path, arch: str, defines: dict) -> str:
    flags = " ".join(f"-D{k}={v}" for k, v in sorted(defines.items()))
    return f"{source.name} for {arch}" + (f" ({flags})" if flags else "")


def compile_cubin(source: str | Path, arch: str, defines: dict | None = None, *, use_cache: bool = True) -> Path:
    """Compile one kernel file to a cubin, or return the cached one. Raises CompileError with nvcc's output."""
    defines = defines or {}
    source = Path(source)
    if not source.is_absolute():
        source = cuda_src_dir() / source
    nvcc = _require_nvcc()
    out = cache_dir() / f"{source.stem}-{arch}-{_key(nvcc, source, arch, defines)}.cubin"
    if use_cache and out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run(_command(nvcc, source, arch, defines, tmp), capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise CompileError(f"nvcc failed on cuda_src/{_describe(source, arch, defines)}:\n{proc.stderr.strip()}")
    os.replace(tmp, out)
    return out


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel: the numbers that say whether a tiling fits on chip."""

    kernel: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int


_FUNC = re.compile(r"Compiling entry function '(\w+)'")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def resource_usage(source: str | Path, arch: str, defines: dict | None = None) -> list[Resources]:
    """Compile with `ptxas -v` and parse its per-kernel report (registers, shared memory, stack, spills)."""
    defines = defines or {}
    source = Path(source)
    if not source.is_absolute():
        source = cuda_src_dir() / source
    nvcc = _require_nvcc()
    out = Path(os.devnull)
    proc = subprocess.run(_command(nvcc, source, arch, defines, out, ("-Xptxas", "-v")), capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(f"nvcc failed on cuda_src/{_describe(source, arch, defines)}:\n{proc.stderr.strip()}")
    found, current, spill = [], None, (0, 0, 0)
    for line in proc.stderr.splitlines():
        if m := _FUNC.search(line):
            current = m.group(1)
        elif m := _SPILL.search(line):
            spill = tuple(int(g) for g in m.groups())
        elif (m := _USED.search(line)) and current:
            found.append(Resources(current, int(m.group(1)), int(m.group(2) or 0), *spill))
            current = None
    return found
