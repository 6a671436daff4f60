"""Content addresses of results.

A result's key is the SHA-256 of a canonical serialization of what determines it: the fully
resolved configuration (as ``swaplab resolve`` prints it: every default filled in, every size
in bytes), the kind of run (a simulation or a host run of the same configuration are different
results) and the swaplab version (a new model may give other numbers for the same
configuration). Canonical: keys sorted, no whitespace, UTF-8, floats as Python's shortest
round-trip repr — so the same configuration always gives the same key, whatever the order of
the file or the overrides that produced it.

A point whose configuration the simulator refuses has no resolved configuration; it is keyed
by what was asked instead (the workload text and the overrides), so that its failure can be
recorded and retried under a stable name.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Sequence


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def result_key(config: Dict[str, Any], version: str, kind: str = "simulation") -> str:
    """The key of the result of running ``config`` (resolved) with swaplab ``version``."""
    return hashlib.sha256(canonical({"config": config, "kind": kind, "swaplab_version": version})).hexdigest()


def request_key(text: str, overrides: Sequence[str], version: str) -> str:
    """The key of a point that could not be resolved (its failure record)."""
    return hashlib.sha256(canonical({"unresolved": {"workload": text, "overrides": list(overrides)},
                                     "swaplab_version": version})).hexdigest()
