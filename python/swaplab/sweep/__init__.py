"""Sweeps: a grid of configurations run into a results store.

grid.py reads a grid file and expands its points; runner.py resolves and keys them, skips what
the store holds and hands the rest to an engine (engine_local.py: a process pool;
engine_ray.py: a Ray cluster), each of which runs work.py's function per point; progress.py
draws the progress line; cli.py is ``swaplab sweep``.
"""

from .grid import Grid, GridError, load
from .runner import Summary, run_sweep

__all__ = ["Grid", "GridError", "Summary", "load", "run_sweep"]
