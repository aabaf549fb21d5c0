"""Results files: reading (every way a file can be wrong becomes one line), atomic saving, and the writer that
rewrites a run's file after every point so that an interrupted sweep keeps what it measured.

A run is JSON, or JSON compressed with gzip where its name ends in .json.gz: a lab run's 2.5 MB of raw samples
take ~0.3 MB so, which is what keeps a repository of many saved runs (and a CI checkout of it) small. Reading
goes by the file's first bytes, not its name, so a compressed run renamed to .json still loads."""

from __future__ import annotations

import fcntl
import gc
import gzip
import json
import os
import socket
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

from gpubench.core.errors import GpubenchError, parser_complaint
from gpubench.core.paths import temporary
from gpubench.results.model import SCHEMA, Point, Run, RunStatus
from gpubench.results.schema import migrate, run_from


SUFFIXES = (".json", ".json.gz")  # what a results file's name ends in: plain, or compressed
_GZIP_MAGIC = b"\x1f\x8b"


def _compressed(path: Path) -> bool:
    """Whether a run saved at `path` is written compressed: its name ends in .gz."""
    return Path(path).name.lower().endswith(".gz")


def _is_results_name(path: Path) -> bool:
    """Whether a file's name is one a saved run may have (what a directory of runs is searched for)."""
    return path.name.lower().endswith(SUFFIXES)


def run_name(path: str | Path) -> str:
    """A results file's name without .json or .json.gz: lab-a.json and lab-a.json.gz are both run "lab-a"."""
    name = Path(path).name
    for suffix in SUFFIXES:  # a .json.gz name does not end in .json, so the order does not matter
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def saved_under(directory: str | Path, pattern: str = "*/*") -> list[Path]:
    """The results files under a directory matching a glob (default: one level down, as results/<gpu>/), plain
    or compressed, in name order."""
    return sorted(p for p in Path(directory).glob(pattern) if _is_results_name(p) and p.is_file())


def decompressed(raw: bytes) -> bytes:
    """A file's bytes as JSON text: gzip's are decompressed (they start with its magic), others are as they are."""
    return gzip.decompress(raw) if raw.startswith(_GZIP_MAGIC) else raw


def save(run: Run, path: str | Path, *, interim: bool = False) -> Path:
    """Write atomically: readers (and a crash or a full disk mid-write) never see half a file. A name ending in .gz
    is written compressed, with no time stamp in the gzip header, so the same run gives the same bytes. `interim`:
    a save that the next one replaces (the writer's after each point) is written in gzip's stored blocks (level
    0) with the run's own fields unindented: still a gzip file of the run's JSON that every reader opens, where
    indenting and compressing it all again after each of a lab run's 352 points took 4.5 s of a 68 s sweep on an
    H200. The final file is indented and compressed as always."""
    path = Path(path)
    tmp = temporary(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = run.to_json(compact_header=interim).encode("utf-8")
        if _compressed(path):
            data = gzip.compress(data, compresslevel=0 if interim else 6, mtime=0)
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise GpubenchError(f"cannot write results to {path} ({e.strerror or e}); the file keeps its last "
                            "complete save") from None
    return path


class RunWriter:
    """Appends points to a run and rewrites its file after each one (an interim save); `finish` writes the final
    file, the bytes `save` gives the finished run."""

    def __init__(self, run: Run, path: str | Path):
        self.run, self.path = run, Path(path)
        save(run, self.path)

    def add(self, point: Point) -> None:
        self.run.points.append(point)
        save(self.run, self.path, interim=True)

    def finish(self, status: RunStatus) -> Path:
        self.run.status = RunStatus(status)
        return save(self.run, self.path)


class Claim:
    """An exclusive claim on a results file for one run's length, so that two runs given the same path cannot
    both write it and silently lose one another's points: a lock file beside it (`.NAME.lock`) held with flock,
    which the kernel releases whatever ends the process (SIGKILL too: a claim left by a dead run is no claim),
    naming its holder for the refusal."""

    def __init__(self, path: str | Path):
        path = Path(path)
        self.lock = path.with_name(f".{path.name}.lock")
        self._fd: int | None = None

    def acquire(self) -> bool:
        """True once this process holds the claim; False while another process does."""
        while self._fd is None:
            fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            except OSError:  # a file system without locks: nothing to hold, and nothing to wait for
                pass
            try:
                current = os.stat(self.lock).st_ino
            except FileNotFoundError:
                current = None
            if current != os.fstat(fd).st_ino:  # its holder released it (removed the file) as we opened it
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {time.strftime('%H:%M:%S')}".encode())
            self._fd = fd
        return True

    def holder(self) -> str:
        try:
            return self.lock.read_text(encoding="utf-8", errors="replace").strip() or "a process starting up"
        except OSError:
            return "a process that has just ended"

    def release(self) -> None:
        if self._fd is not None:
            self.lock.unlink(missing_ok=True)  # before the lock goes, so that a waiting opener sees it is stale
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def being_written(path: str | Path) -> bool:
    """Whether a live gpubench run holds the claim on this results file (without taking or making it): a file
    marked running that none holds was left so by a run ended outright (SIGKILL, SIGQUIT, out of memory)."""
    try:
        fd = os.open(Claim(path).lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:  # a file system without locks: nothing tells
        return True
    finally:
        os.close(fd)


def claim(path: str | Path, flag: str = "-o") -> Claim:
    """The claim on `path` for this run, or one line naming the run that holds it."""
    c = Claim(path)
    if not c.acquire():
        raise GpubenchError(f"{flag} {path} is being written by another gpubench run ({c.holder()}): wait for it to "
                            "end, or choose another path")
    return c


@contextmanager
def _uncollected():
    """Reading a run makes hundreds of thousands of objects and no garbage cycles, so the cyclic collector is held
    off while it runs, and then the run is frozen out of its sight (a loaded run lives as long as the command that
    reads it): otherwise every full collection walks all its points again, and a 20,000-point run's tables and
    comparison take superlinear time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _once_each(pairs: list) -> dict:
    """An object of the file, whose keys must differ: JSON readers settle a key given twice each their own way
    (Python's keeps the last), so a file holding `"status": "interrupted"` and then `"status": "complete"` is
    ambiguous, and refused."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {twice!r} is given twice in one object")
    return obj


def results_path(path: str | Path) -> Path:
    """A results file or directory as given on the command line: an empty or blank one (an unset variable) is
    refused, where Path('') would quietly be the current directory."""
    if not str(path).strip():
        raise GpubenchError(f"a results file is given as {str(path)!r} (an unset variable?): give a .json or "
                            ".json.gz file")
    return Path(path)


def load(path: str | Path, *, each_once: bool = True) -> Run:
    """Read a saved run (of any version this gpubench knows), turning every way a file can be wrong into one
    line that says which. A point the file holds more than once is read as one (said in a note), unless
    `each_once` is False: then every measurement as the file holds it."""
    path = results_path(path)
    if not path.is_file():
        raise GpubenchError(f"results file {path} does not exist" if not path.exists() else
                            f"results file {path} is not a file")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise GpubenchError(f"results file {path} cannot be read ({e})") from None
    try:
        raw = decompressed(raw)
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError; a cut file is an EOFError
        raise GpubenchError(f"results file {path} is gzip-compressed but cannot be decompressed (truncated or "
                            f"corrupt?): {e or 'it ends early'}") from None
    try:
        text = raw.decode("utf-8-sig")  # -sig: a byte-order mark an editor added is no error
    except UnicodeDecodeError as e:
        raise GpubenchError(f"results file {path} cannot be read ({e})") from None
    if not text.strip():
        raise GpubenchError(f"results file {path} is empty")
    with _uncollected():
        try:
            data = json.loads(text, object_pairs_hook=_once_each)
        except (ValueError, RecursionError) as e:  # ValueError: JSONDecodeError, or an integer past 4300 digits
            raise GpubenchError(f"results file {path} is not valid JSON (truncated or corrupt?): {parser_complaint(e)}") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise GpubenchError(f"{path} is not a gpubench results file (no \"schema\": \"{SCHEMA}\")")
        return run_from(migrate(data, path), path, each_once=each_once)
