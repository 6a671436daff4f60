"""The host runner: the same workload on the real kernel underneath (docs/host-runner.md).

* :func:`run_host` — run a workload file in a memory cgroup with its swap device and knobs,
  and return a result in the simulator's schema (``"kind": "host"``).
* :func:`compare` — simulator vs host, per counter and per task metric, and variant ratios.
* :func:`calibrate` — measure this machine and write a device preset with provenance.

Everything the runner changes on the machine is journalled and restored (on success, error,
Ctrl-C and SIGTERM); ``swaplab host cleanup`` replays the journal of a run that was killed.
"""

from .errors import HostError, OOMKilled, PreconditionError
from .runner import HostOptions, run_host

__all__ = ["HostError", "PreconditionError", "OOMKilled", "HostOptions", "run_host"]
