"""swaplab: a simulator and lab for Linux page reclaim and swap.

    >>> import swaplab
    >>> r = swaplab.simulate("examples/quick.toml", kernel__readahead="none")
    >>> r.vmstat["pswpin"], r.tasks[["name", "elapsed_s", "fault_p99"]]
"""

from . import _core
from ._core import ConfigError
from .api import load_workload, make_overrides, resolve, simulate
from .io import write_atomic
from .result import Result
from .store import load_results

__version__: str = _core.version()

__all__ = ["ConfigError", "Result", "simulate", "resolve", "load_workload", "make_overrides",
           "write_atomic", "load_results", "__version__"]
