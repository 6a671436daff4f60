"""The results store: every result under a key that is the hash of its fully resolved
configuration, kind and swaplab version (keys.py), one atomically written JSON record per
result (points.py), a tidy Parquet table of all of them (table.py) and DuckDB queries over it
(query.py).

    >>> import swaplab
    >>> df = swaplab.load_results("results/store", sweep="quick-swappiness")
    >>> df.groupby("kernel_swappiness")["elapsed_s"].mean()
"""

from __future__ import annotations

import os
from typing import Optional

from .keys import request_key, result_key
from .points import Store, StoreError

DEFAULT_STORE = os.path.join("results", "store")


def load_results(store: "str | os.PathLike[str]" = DEFAULT_STORE, sweep: Optional[str] = None):
    """The store's table as a pandas DataFrame: one row per run, one column per axis and per
    metric (see swaplab.store.table); ``sweep`` keeps one sweep's rows."""
    from .table import load

    return load(Store(store), sweep)


__all__ = ["DEFAULT_STORE", "Store", "StoreError", "load_results", "request_key", "result_key"]
