"""The Ray engine (``--engine ray``): the points of a sweep as Ray tasks on a cluster.

``--address`` joins a running cluster (``ray start --head`` on one node, ``ray start
--address=HEAD:6379`` on the others, or any managed cluster); without it a local cluster of
``--jobs`` CPUs is started for the sweep and stopped after it. Every node must have the same
swaplab installed (a result records the version that computed it; a point computed by another
version is refused as failed, since its key promised this version's numbers).

How the work is split: one task per point (a point is one simulation, from milliseconds to
minutes, so per-task scheduling costs little beside it), each asking for one CPU. The workload
text goes into the object store once and every task references it. The driver keeps at most
``IN_FLIGHT_PER_CPU`` tasks per cluster CPU submitted, so a million-point grid does not sit in
the scheduler's queue at once, and results come back to the driver, which alone writes the
store — workers need no shared file system.
"""

from __future__ import annotations

import os
from typing import Iterator, List, Optional, Tuple

from .engine_local import Task
from .work import Outcome, simulate_point

IN_FLIGHT_PER_CPU = 2
# A local cluster's object store holds the workload text and results in flight (a result is
# kilobytes to a few MiB): 256 MiB, not Ray's default of 30% of RAM, which a container's small
# /dev/shm cannot give.
LOCAL_OBJECT_STORE = 256 << 20


class RayUnavailable(RuntimeError):
    """Ray is not installed or the cluster cannot be reached (a user-facing, one-line error)."""


def import_ray():
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--engine ray needs Ray: pip install 'swaplab[ray]'") from None
    return ray


def _remote_point(text: str, source: str, overrides: List[str]) -> Outcome:
    return simulate_point(text, source, overrides)


def run(tasks: List[Task], jobs: int, address: Optional[str] = None) -> Iterator[Tuple[str, Outcome]]:
    """Yield (key, outcome) as points finish, in completion order."""
    if not tasks:
        return
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        # Quiet: the sweep draws its own progress; Ray's worker logs would interleave with it.
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        try:
            if address:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            else:
                ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False,
                         logging_level="ERROR", configure_logging=True,
                         object_store_memory=LOCAL_OBJECT_STORE)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise RayUnavailable(f"--engine ray: cannot start or reach the cluster ({' '.join(str(e).split())})") from None
    remote = ray.remote(num_cpus=1, max_retries=2)(_remote_point)
    pending = {}
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", jobs)))
        window = IN_FLIGHT_PER_CPU * cpus
        text_refs = {}
        queue = list(reversed(tasks))
        while queue or pending:
            while queue and len(pending) < window:
                key, text, source, overrides = queue.pop()
                if text not in text_refs:
                    text_refs[text] = ray.put(text)
                pending[remote.remote(text_refs[text], source, overrides)] = key
            refs = list(pending)
            done, rest = ray.wait(refs, num_returns=1)
            if rest:  # and whatever else is ready: one pass over the window per batch, not per point
                done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in done:
                key = pending.pop(ref)
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayError as e:
                    outcome = (None, f"ray: {' '.join(str(e).split())[:500]}", 0.0, 0.0, "")
                yield key, outcome
    finally:
        for ref in list(pending):
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
