"""Where gpubench finds what it ships and keeps what it makes.

What it ships lives at the top of the repository, beside the package, and travels inside the wheel:

    cuda_src/    kernel sources, headers and their specs     (the wheel maps it to gpubench/cuda_src)
    configs/     suites, and configs/tuned/ for the shipped tuned configurations   (gpubench/configs)

What it makes goes to the user's cache and config directories, never the installed package:

    compiled kernels         <user cache>/kernels        (GPUBENCH_CACHE moves <user cache>)
    tuned configurations     <user config>/tuned         (GPUBENCH_TUNED moves it; a project may name its own file)

<user cache> and <user config> are platformdirs' answers for "gpubench" (~/.cache/gpubench and
~/.config/gpubench on Linux, honouring XDG_CACHE_HOME and XDG_CONFIG_HOME). An environment variable that names
something unusable is refused in one line, when it is first needed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import platformdirs

from gpubench.core.errors import GpubenchError


def shipped(name: str) -> Path:
    """A shipped top-level folder (`cuda_src`, `configs`): inside the installed package when installed from a wheel
    (pyproject's package-dir maps it there), beside the package in a checkout or an editable install."""
    package = Path(__file__).resolve().parent.parent  # gpubench/, above core/
    for candidate in (package / name, package.parent / name):
        if candidate.is_dir():
            return candidate
    raise GpubenchError(f"gpubench is installed without its {name}/ folder (looked in {package} and beside it): "
                        "reinstall it")


EXAMPLE_RUN = ("nvidia-h200", "lab-ops-after")  # the saved run `gpubench show --example` renders: an H200's lab


def example_run() -> Path:
    """The saved run shipped as the example, wherever gpubench runs from: gpubench/examples/ in a wheel (pyproject
    maps results/nvidia-h200/ there and takes the lab run alone), results/nvidia-h200/ in a checkout."""
    package = Path(__file__).resolve().parent.parent
    gpu, name = EXAMPLE_RUN
    for folder in (package / "examples", package.parent / "results" / gpu):
        for candidate in (folder / f"{name}.json.gz", folder / f"{name}.json"):
            if candidate.is_file():
                return candidate
    raise GpubenchError(f"gpubench is installed without its example run (looked for {name}.json.gz in "
                        f"{package / 'examples'} and beside the package): reinstall it")


def cuda_src_dir() -> Path:
    return shipped("cuda_src")


def configs_dir() -> Path:
    return shipped("configs")


def env_dir(name: str) -> Path | None:
    """The directory an environment variable names (made if missing), None when it is unset; one line naming the
    variable when it cannot be that directory."""
    value = os.environ.get(name)
    if value is None:
        return None
    if not value.strip() or "\0" in value:
        raise GpubenchError(f"{name} is set but empty: unset it, or set it to a directory")
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise GpubenchError(f"{name}={value} is not a directory: unset it, or set it to a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GpubenchError(f"{name}={value} cannot be made a directory ({e.strerror or e}): unset it, or set it to "
                            "a directory you can write") from None
    return path


def resolved(path: str | Path) -> Path:
    """`path` absolute, with its symbolic links followed as far as they go. Unlike Path.resolve, a link loop is
    not an error here (Python 3.11 raises RuntimeError): the path is left for the caller's is_file() or is_dir()
    check to refuse in its own words."""
    if "\0" in str(path):
        raise GpubenchError(f"{str(path)!r} is not a path: a path holds no NUL character")
    return Path(os.path.realpath(path))


def cache_dir() -> Path:
    return env_dir("GPUBENCH_CACHE") or platformdirs.user_cache_path("gpubench")


def config_dir() -> Path:
    return platformdirs.user_config_path("gpubench")


def tuned_dir() -> Path:
    return env_dir("GPUBENCH_TUNED") or config_dir() / "tuned"


def temporary(path: Path) -> Path:
    """The sibling a file is written to before it replaces `path` atomically (hidden, this process's; the pid at
    its widest, so that the longest name -o takes does not depend on the process)."""
    return path.with_name(f".{path.name}.{os.getpid():07d}.tmp")


def name_max(directory: Path) -> int:
    """The longest file name the file system under `directory` (or its nearest existing parent) takes."""
    for d in (directory, *directory.parents):
        if d.is_dir():
            try:
                return os.pathconf(d, "PC_NAME_MAX")
            except (OSError, ValueError):
                break
    return 255


def slug(text: str, fallback: str, keep: str = "") -> str:
    """`text` as part of a file name gpubench makes (a device's tuned file, a cuDNN plan cache): lower case, each run
    of characters other than a-z, 0-9 and those in `keep` one hyphen, none at either end; `fallback` where nothing
    is left."""
    return re.sub(f"[^a-z0-9{re.escape(keep)}]+", "-", text.lower()).strip("-") or fallback


def shown_path(path: str | Path) -> str:
    """A path as text to show or write into a page: the bytes of a name that is not UTF-8 (Python keeps them as
    lone surrogates, which no UTF-8 writer takes) become U+FFFD, as a terminal shows them."""
    return os.fsencode(path).decode("utf-8", "replace")
