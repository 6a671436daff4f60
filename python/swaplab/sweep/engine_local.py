"""The local engine: a process pool on this machine (``--jobs``, default all cores).

Workers are forked (the simulator's extension is already loaded), ignore SIGINT (Ctrl-C goes to
the sweep, which terminates the pool; ``workers`` keeps that true while the pool starts), and
take one point at a time so that long and short points balance. With one job the points run in
the sweep's own process, stoppable mid-point.
"""

from __future__ import annotations

from typing import Iterator, List, Tuple

from ..workers import imap_unordered
from .work import Outcome, simulate_point

Task = Tuple[str, str, str, List[str]]      # (key, workload text, source, overrides)


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
    yield from imap_unordered(_run, tasks, jobs)


def _run_here(tasks: List[Task]) -> Iterator[Tuple[str, Outcome]]:
    from ..api import _SigintFlag
    from .work import simulate_here

    with _SigintFlag() as flag:
        for key, text, source, overrides in tasks:
            if flag.hit:
                raise KeyboardInterrupt
            yield key, simulate_here(text, source, overrides, lambda: flag.hit)
