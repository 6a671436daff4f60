"""The local engine: a process pool on this machine (``--jobs``, default all cores).

Workers are forked (the simulator's extension is already loaded), ignore SIGINT (Ctrl-C goes to
the sweep, which terminates the pool), and take one point at a time so that long and short
points balance. With one job the points run in the sweep's own process, stoppable mid-point.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import sys
from typing import Iterator, List, Tuple

from .work import Outcome, simulate_point

Task = Tuple[str, str, str, List[str]]      # (key, workload text, source, overrides)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(task: Task) -> Tuple[str, Outcome]:
    key, text, source, overrides = task
    return key, simulate_point(text, source, overrides)


def run(tasks: List[Task], jobs: int) -> Iterator[Tuple[str, Outcome]]:
    """Yield (key, outcome) as points finish, in completion order."""
    if not tasks:
        return
    jobs = max(1, min(jobs, len(tasks)))
    if jobs == 1:
        yield from _run_here(tasks)
        return
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    pool = ctx.Pool(jobs, initializer=_ignore_sigint)
    clean = False
    try:
        yield from pool.imap_unordered(_run, tasks, chunksize=1)
        pool.close()
        clean = True
    finally:
        if not clean:
            pool.terminate()
        pool.join()


def _run_here(tasks: List[Task]) -> Iterator[Tuple[str, Outcome]]:
    from ..api import _SigintFlag
    from .work import simulate_here

    with _SigintFlag() as flag:
        for key, text, source, overrides in tasks:
            if flag.hit:
                raise KeyboardInterrupt
            yield key, simulate_here(text, source, overrides, lambda: flag.hit)
