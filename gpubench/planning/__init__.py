"""Sweeps checked from the command line, a suite or an API call, before anything runs."""
