"""Saved runs: the typed model (model.py), the schema check and migrations of older files (schema.py), and
reading and atomic writing (io.py). Nothing here renders; gpubench/views/ does."""

from gpubench.results.io import (SUFFIXES, Claim, RunWriter, being_written, claim, decompressed, load,
                                 results_path, run_name, save, saved_under)
from gpubench.results.model import SCHEMA, SCHEMA_VERSION, Details, Point, Run, RunStatus, Status

__all__ = ["SCHEMA", "SCHEMA_VERSION", "SUFFIXES", "Claim", "Details", "Point", "Run", "RunStatus", "RunWriter",
           "Status", "being_written", "claim", "decompressed", "load", "results_path", "run_name", "save",
           "saved_under"]
