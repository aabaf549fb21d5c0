"""The CPU backend's own reading of the machine (gpubench/backends/cpu.py)."""

import gc
import warnings

from gpubench.backends import cpu


def test_reading_proc_leaves_no_file_open():
    """Under PYTHONWARNINGS=error (or -X dev) a file left to the collector printed "Exception ignored ...
    ResourceWarning" with a traceback into every run's output."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        name, free = cpu._cpu_name(), cpu._available_bytes()
        gc.collect()
    assert name and (free is None or free > 0)
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
