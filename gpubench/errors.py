"""The one exception type users see: a problem with their input or their machine, printed as one line.

Anything raised as :class:`GpubenchError` reaches the terminal as ``gpubench: error: <message>`` with exit
code 2 and no traceback. Messages say what is wrong and what is allowed.
"""


class GpubenchError(Exception):
    """A user-facing problem (bad input, missing GPU or library, unreadable file): one line, exit 2."""


class CompileError(GpubenchError):
    """nvcc rejected a kernel: the message holds nvcc's own output and the file."""
