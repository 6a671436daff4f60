"""``--scale F``: shrink a workload's memory sizes and durations by F for a quick look.

Scaled: ``machine.ram``, ``machine.memcg_limit``, every ``size`` (mappings and swap devices),
every ``time_limit``, ``start_delay`` and ``ramp_time``, and explicit ``touches``, ``keys`` and
``requests`` counts (a kv store's slab mapping follows from its keys), and an hpl phase's
matrix order ``n`` by the square root of F (its matrix, and the mapping sized from it, holds
n² doubles). Not scaled: the
kernel's own reserve (``machine.kernel_reserved``, a fixed footprint), per-touch compute,
device figures and kernel knobs. Touch counts given as ``cycles`` follow from the sizes.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Dict, List

from .units import PAGE_SIZE, parse_duration, parse_size

SIZE_KEYS = {"ram", "memcg_limit", "size"}
DURATION_KEYS = {"time_limit", "start_delay", "ramp_time"}
COUNT_KEYS = {"touches", "keys", "requests"}
SQUARE_ROOT_KEYS = {"n"}
_NOT_SCALED_PARENTS = {"params", "costs", "kernel"}


def _scale_size(v: Any, f: float) -> Any:
    b = parse_size(v)
    return max(PAGE_SIZE, int(b / f) // PAGE_SIZE * PAGE_SIZE) if b else 0


def _scale_duration(v: Any, f: float) -> Any:
    return max(1, int(round(parse_duration(v) / f)))


def _scale_value(key: str, v: Any, f: float) -> Any:
    if key in SIZE_KEYS:
        return _scale_size(v, f)
    if key in DURATION_KEYS:
        return _scale_duration(v, f)
    if key in COUNT_KEYS and isinstance(v, int) and not isinstance(v, bool):
        return max(1, int(round(v / f)))
    if key in SQUARE_ROOT_KEYS and isinstance(v, int) and not isinstance(v, bool):
        return max(1, int(round(v / f ** 0.5)))
    return v


def _walk(node: Any, f: float, parent: str) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if parent in _NOT_SCALED_PARENTS:
                out[k] = v
            elif isinstance(v, (dict, list)):
                out[k] = _walk(v, f, k)
            else:
                try:
                    out[k] = _scale_value(k, v, f)
                except ValueError:
                    out[k] = v  # the core reports the malformed value with its location
        return out
    if isinstance(node, list):
        return [_walk(x, f, parent) for x in node]
    return node


def scale_workload(doc: Dict[str, Any], f: float) -> Dict[str, Any]:
    """A copy of a workload document (parsed TOML) with sizes and durations divided by f."""
    if f == 1:
        return copy.deepcopy(doc)
    return _walk(doc, f, "")


_OVERRIDE = re.compile(r"^\s*([^=]+?)\s*=\s*(.*?)\s*$")


def scale_override(ov: str, f: float) -> str:
    """Scale one ``key=value`` override when its key is a size, duration or touch count."""
    if f == 1:
        return ov
    m = _OVERRIDE.match(ov)
    if not m:
        return ov
    key, raw = m.group(1), m.group(2)
    segs = key.split(".")
    last = segs[-1]
    if any(s in _NOT_SCALED_PARENTS for s in segs[:-1]):
        return ov
    if last not in SIZE_KEYS | DURATION_KEYS | COUNT_KEYS | SQUARE_ROOT_KEYS:
        return ov
    value: Any = raw.strip('"').strip("'")
    if last in COUNT_KEYS | SQUARE_ROOT_KEYS:
        try:
            value = int(value)
        except ValueError:
            return ov
    try:
        return f"{key}={_scale_value(last, value, f)}"
    except ValueError:
        return ov


def scale_overrides(ovs: List[str], f: float) -> List[str]:
    return [scale_override(o, f) for o in ovs]
