"""Vocabulary every layer shares: errors, exit codes, paths, precisions, GPUs, expressions."""
