"""A project's own Python functions: the module of a `.py` variant imported once per process, its function found and
its signature checked against what gpubench will pass, and what the function returns made fit for a results file.

One function, :func:`check`, is the preflight of every Python variant (CPU or GPU) before any point runs: a file
that does not import, a symbol that is missing or not callable, a Triton kernel named where its launcher should be,
or a function that cannot take the spec's arguments and a configuration's parameters is one line naming the file
and the first error (GpubenchError: exit 2). The backends load functions through :func:`function` too, so the
worker and the preflight read the same module the same way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import re
import sys
import traceback
from pathlib import Path
from typing import Callable, Mapping

from gpubench.core.errors import GpubenchError

_modules: dict[tuple, object] = {}  # by path and the file's modification time and size: an edit imports anew


def _first_error(path: Path, err: BaseException) -> str:
    """The error in one line, with the line of the user's file it came from where there is one."""
    if isinstance(err, SyntaxError):
        return f"{type(err).__name__}: {err}"  # "expected ':' (k.py, line 1)"
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    where = f" (line {frames[-1].lineno})" if frames else ""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}{where}"


def module(path: Path):
    """The module of `path`, imported once per process (and again once the file changes) under a name of its own
    (so two projects' files named alike never meet); GpubenchError naming the file and the first error when it
    does not import."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as e:
        raise GpubenchError(f"{path}: cannot be read ({e.strerror or e})") from None
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key not in _modules:
        name = "gpubench_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise GpubenchError(f"{path}: not a Python module")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses and pickling look their module up by name
        if str(path.parent) not in sys.path:  # its own modules beside it import, after the libraries of the same
            sys.path.append(str(path.parent))  # name (a helper named json.py never hides the standard library's)
        try:
            spec.loader.exec_module(mod)
        except BaseException as e:  # whatever the import raises (SystemExit too) is the user's, in one line
            sys.modules.pop(name, None)
            if isinstance(e, KeyboardInterrupt):
                raise
            raise GpubenchError(f"importing {path} failed: {_first_error(path, e)}") from None
        _modules[key] = mod
    return _modules[key]


def function(path: Path, symbol: str) -> Callable:
    """The callable `symbol` of the module at `path`; GpubenchError when it is missing, not callable, or a Triton
    kernel itself (which only its launcher may call)."""
    fn = getattr(module(path), symbol, None)
    if fn is None:
        raise GpubenchError(f"{path}: has no function {symbol!r}")
    if type(fn).__module__.split(".")[0] == "triton":
        raise GpubenchError(f"{path}: {symbol} is a Triton kernel ({type(fn).__name__}); name the Python function "
                            "that launches it (kernel[grid](...)) as the variant's kernel")
    if not callable(fn):
        raise GpubenchError(f"{path}: {symbol} is not callable (it is a {type(fn).__name__})")
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):  # a call would only make a coroutine
        raise GpubenchError(f"{path}: {symbol} is an async function, which gpubench would call without running "
                            "it: make it a plain def")
    return fn


def function_of(variant) -> Callable:
    """The function a Python variant calls: the live one it was given (the Python API), or its source's."""
    program = variant.code.program
    return program.function if program.function is not None else function(program.source, program.kernel)


def check(variant, configs) -> Callable:
    """Preflight of a Python variant: its function imported and able to take the spec's arguments in order and each
    configuration's parameters as keywords. Returns the function; GpubenchError (one line) otherwise."""
    fn = function_of(variant)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check before calling it
        return fn
    program = variant.code.program
    for config in configs:  # the variant's first precision and layout stand in for a problem's
        keywords = variant.code.call_keywords(config, variant.scope.dtypes[0], variant.scope.layouts[0])
        try:
            signature.bind(*program.args, **keywords)
        except TypeError as e:
            given = ", ".join([*program.args, *(f"{k}=" for k in keywords)])
            raise GpubenchError(f"{program.source or 'measure'}: {program.kernel}{signature} cannot be called as "
                                f"{program.kernel}({given}), its arguments (args)"
                                f"{' and configuration ' + config.label if config.values else ''}: {e}") from None
    return fn


# What a compiler raises about the code it was given, by the top package and name of the class (or a base of it):
# Triton's CompilationError (and its kinds: CompileTimeAssertionFailure, UnsupportedLanguageConstruct), CuPy's
# CompileException (nvrtc rejecting a RawKernel), numba's TypingError. Matched by name, so that gpubench imports none.
COMPILER_ERRORS = {("triton", "CompilationError"), ("cupy", "CompileException"), ("numba", "TypingError")}


def compile_error(err: BaseException) -> str | None:
    """The first error, in one line, of an exception by which a compiler rejects the user's code (COMPILER_ERRORS),
    else None: an error of the code itself, which every call would meet, unlike a fault while it runs."""
    if not any((c.__module__.split(".")[0], c.__name__) in COMPILER_ERRORS for c in type(err).__mro__):
        return None
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    # Triton's first line says where in the kernel: "at LINE:COL:"
    where = lines[0].rstrip(":") if re.fullmatch(r"at \d+:\d+:?", lines[0]) else None
    cause = repr(err.__cause__) if err.__cause__ is not None else None  # Triton: the error in the kernel's code
    message = getattr(err, "error_message", None) or cause or next(
        (line for line in lines if "error" in line.lower()), lines[-1])
    message = re.sub(r"^\S*\((\d+)\): ", r"line \1: ", str(message).strip().splitlines()[0])  # nvrtc's temporary file
    return f"{type(err).__name__}{' ' + where if where else ''}: {message}"


def reported(value, depth: int = 0) -> object:
    """What a function returned (a mapping: what it chose, e.g. a Triton autotune configuration), as JSON values:
    strings, finite numbers, booleans and None kept, containers kept to a few levels, anything else as its text."""
    if isinstance(value, Mapping):
        if depth > 3:
            return str(value)
        return {str(k): reported(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [reported(v, depth + 1) for v in value] if depth <= 3 else str(value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


def report_of(value) -> dict:
    """The `reported` record of a function's return value: a mapping kept, anything else (None) nothing."""
    return reported(value) if isinstance(value, Mapping) else {}
