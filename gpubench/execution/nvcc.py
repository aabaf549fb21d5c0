"""Compiling kernels with nvcc, cached on disk.

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
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from gpubench.core import paths
from gpubench.core.errors import CompileError, GpubenchError

NVCC_FLAGS = ("-O3", "-lineinfo", "-std=c++17")


def cache_dir() -> Path:
    """Compiled kernels: the user's cache directory (GPUBENCH_CACHE moves it), never the installed package."""
    return paths.cache_dir() / "kernels"


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


def _command(nvcc: str, source: Path, arch: str, defines: dict, out: Path | str, includes=(), extra=(),
             mode: str = "-cubin") -> list[str]:
    flags = [f"-D{k}={v}" for k, v in sorted(defines.items())] + [f"-I{d}" for d in includes]
    return [nvcc, mode, *arch_flag(arch), *NVCC_FLAGS, *flags, *extra, "-o", str(out), str(source)]


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def local_headers(source: Path, includes=()) -> list[Path]:
    """Every file a kernel pulls in through `#include "..."`, followed through headers that include others
    (looked up beside the including file, then in the include directories, as nvcc does); <...> system
    headers are left out."""
    found: dict[Path, None] = {}
    pending = [source]
    while pending:
        current = pending.pop()
        try:
            text = current.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for name in INCLUDE.findall(text):
            for d in (current.parent, *map(Path, includes)):
                candidate = (d / name).resolve()
                if candidate.is_file():
                    if candidate not in found:
                        found[candidate] = None
                        pending.append(candidate)
                    break
    return sorted(found)


def _key(nvcc: str, source: Path, arch: str, defines: dict, includes=()) -> str:
    h = hashlib.sha256()
    # The kernel and every header it includes (kernels share cores such as include/register_tile.cuh): an edit
    # to any of them is a new key.
    for path in [source, *local_headers(source, includes)]:
        h.update(str(path.name).encode() + b"\0" + path.read_bytes())
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


def first_error(output: str) -> str:
    """nvcc's first error line ("file.cu(12): error: ..."), or its first line where none says error."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "no output")


def _failed(source: Path, arch: str, defines: dict, output: str) -> CompileError:
    log = cache_dir().parent / "nvcc-errors" / f"{source.stem}.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(output, encoding="utf-8")
        where = f"; nvcc's whole output: {log}"
    except OSError:
        where = ""
    return CompileError(f"nvcc failed on {_describe(source, arch, defines)}: {first_error(output)}{where}", output)


def _source(source: str | Path) -> Path:
    source = Path(source)
    if not source.is_absolute():
        from gpubench.specs.catalog import kernels_dir  # a built-in kernel named by its file

        source = kernels_dir() / source
    return source


def compile_cubin(source: str | Path, arch: str, defines: dict | None = None, *, includes=(),
                  use_cache: bool = True) -> Path:
    """Compile one kernel file to a cubin, or return the cached one. Raises CompileError naming nvcc's first error."""
    defines = defines or {}
    source = _source(source)
    nvcc = _require_nvcc()
    key = _key(nvcc, source, arch, defines, includes)
    out = cache_dir() / f"{source.parent.name}-{source.stem}-{arch}-{key}.cubin"
    if use_cache and out.is_file():
        return out
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GpubenchError(f"the kernel cache {out.parent} cannot be made ({e.strerror or e}): set GPUBENCH_CACHE "
                            "to a directory you can write") from None
    tmp = out.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    proc = subprocess.run(_command(nvcc, source, arch, defines, tmp, includes), capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise _failed(source, arch, defines, proc.stderr.strip() or proc.stdout.strip())
    os.replace(tmp, out)
    return out


def compile_all(jobs, threads: int | None = None) -> list[tuple[tuple, CompileError]]:
    """Compile (source, defines, arch, includes) jobs in parallel (nvcc runs outside the GIL); the failures,
    each as (job, error)."""
    from concurrent.futures import ThreadPoolExecutor

    def build(job):
        source, defines, arch, includes = job
        try:
            compile_cubin(source, arch, dict(defines), includes=includes)
        except CompileError as e:
            return job, e
        return None

    unique = list(dict.fromkeys(jobs))
    with ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 2) as pool:
        return [f for f in pool.map(build, unique) if f is not None]


_ENTRY = re.compile(r"\.entry\s+(\w+)\(")
_MAXNTID = re.compile(r"\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)")


def launch_bounds(source: str | Path, arch: str, defines: dict | None = None, includes=()) -> dict[str, int]:
    """Each kernel's __launch_bounds__ thread count, read from the PTX nvcc emits (.maxntid), for the kernels
    that declare one: what a spec's block must match, checked without a GPU."""
    defines = defines or {}
    source = _source(source)
    nvcc = _require_nvcc()
    proc = subprocess.run(_command(nvcc, source, arch, defines, "-", includes, mode="-ptx"), capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise _failed(source, arch, defines, proc.stderr.strip())
    bounds, kernel = {}, None
    for line in proc.stdout.splitlines():
        if m := _ENTRY.search(line):
            kernel = m.group(1)
        elif (m := _MAXNTID.search(line)) and kernel:
            bounds[kernel] = int(m.group(1)) * int(m.group(2)) * int(m.group(3))
    return bounds


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel: the numbers that say whether a tiling fits on chip."""

    kernel: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int
    wgmma_serialized: bool = False  # ptxas made every wgmma wait for the one before (C7520: "Potential Performance
    # Loss: wgmma.mma_async instructions are serialized"), e.g. for a wgmma issued behind a branch


_FUNC = re.compile(r"Compiling entry function '(\w+)'")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_SERIALIZED = re.compile(r"wgmma\.mma_async instructions are serialized.*function '(\w+)'")


def resource_usage(source: str | Path, arch: str, defines: dict | None = None) -> list[Resources]:
    """Compile with `ptxas -v` and parse its per-kernel report (registers, shared memory, stack, spills)."""
    defines = defines or {}
    source = _source(source)
    nvcc = _require_nvcc()
    out = Path(os.devnull)
    proc = subprocess.run(_command(nvcc, source, arch, defines, out, extra=("-Xptxas", "-v")), capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise _failed(source, arch, defines, proc.stderr.strip())
    found, current, spill = [], None, (0, 0, 0)
    serialized = set(_SERIALIZED.findall(proc.stderr))
    for line in proc.stderr.splitlines():
        if m := _FUNC.search(line):
            current = m.group(1)
        elif m := _SPILL.search(line):
            spill = tuple(int(g) for g in m.groups())
        elif (m := _USED.search(line)) and current:
            found.append(Resources(current, int(m.group(1)), int(m.group(2) or 0), *spill, current in serialized))
            current = None
    return found


_INJECTED = re.compile(r"warpgroup\.wait is injected in around line (\d+)")


def injected_waits(source: str | Path, arch: str, defines: dict | None = None) -> tuple[list[str], list[int]]:
    """The kernel's PTX (its lines) and where ptxas put the warpgroup waits it added (C7517: "warpgroup.wait is
    injected ... to allow use of registers defined by GMMA"), as 1-based lines of that PTX. Such a wait ends every
    wgmma in flight: where it lands says which work the wgmmas can overlap."""
    defines = defines or {}
    source = _source(source)
    nvcc = _require_nvcc()
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / f"{source.stem}.ptx"
        proc = subprocess.run(_command(nvcc, source, arch, defines, ptx, mode="-ptx"), capture_output=True, text=True)
        if proc.returncode != 0:
            raise _failed(source, arch, defines, proc.stderr.strip())
        ptxas = Path(nvcc).with_name("ptxas")
        proc = subprocess.run([str(ptxas), "-v", f"-arch={arch}", str(ptx), "-o", os.devnull], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise _failed(source, arch, defines, proc.stderr.strip())
        return ptx.read_text(encoding="utf-8").splitlines(), [int(n) for n in _INJECTED.findall(proc.stderr)]
