"""Variants: kernel specs read, checked and catalogued; runner kinds; a project's own code."""
