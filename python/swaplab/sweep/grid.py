"""Grid files (``swaplab sweep GRID.toml``): a workload and the axes to sweep over.

```toml
workload = "examples/quick.toml"     # a workload or an experiment file (or an experiment name)
name = "quick-swappiness"            # the sweep's name in the store (default: the file's stem)
scale = 1                            # divide sizes and durations by this (as reproduce --scale)
set = ["kernel.profile=\\"6.x\\""]    # overrides of every point

[axes]
"kernel.swappiness" = [0, 60, 100]   # any --set key; a dotted bare key means the same
kernel.page_cluster = [0, 3]
seeds = [1, 2]                       # or: runs = 2 (seeds seed, seed+1 from the workload's seed)
```

The points are the product of the axes in the order the file writes them (seeds last). The
workload path is relative to the current directory, as for every other command (the grid
file's own directory is tried second, so a grid next to its workload works from anywhere).

An experiment file brings its workload and its ``set``; two more axes then name its cells:
``row`` and ``variant`` (lists of names). Without them a sweep runs every row with the baseline
variant, which is what ``swaplab run`` on the experiment runs.
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .. import tomlio
from ..api import toml_value
from ..scale import scale_overrides, scale_workload

TOP_KEYS = ("workload", "name", "scale", "set", "axes")
SEED_AXES = ("seeds", "runs")
CELL_AXES = ("row", "variant")


class GridError(ValueError):
    """A mistake in a grid file: the message names the file and the key."""


@dataclass
class Point:
    """One configuration of the sweep: its axis values and the overrides that make it."""

    index: int
    axes: Dict[str, Any]
    overrides: List[str]


@dataclass
class Grid:
    path: Path
    name: str
    text: str                      # the workload as TOML (scaled when scale != 1)
    source: str                    # where the workload came from, for error messages
    axes: Dict[str, List[Any]]     # axis name -> values, in product order (seed last)
    points: List[Point]
    scale: float = 1.0
    experiment: Optional[str] = None
    base_set: List[str] = field(default_factory=list)


def _err(path: Path, msg: str) -> GridError:
    return GridError(f"{path}: {msg}")


def _flatten_axes(path: Path, table: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """``kernel.swappiness = [...]`` in TOML is a nested table; both spellings name one axis."""
    out: Dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten_axes(path, v, key + "."))
        else:
            out[key] = v
    return out


def _read(path: Path) -> Dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise GridError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise GridError(f"{path}: is a directory") from None
    except tomllib.TOMLDecodeError as e:
        raise _err(path, f"not valid TOML: {e}") from None
    except RecursionError:
        raise _err(path, "not valid TOML: arrays or tables nested too deeply") from None
    except UnicodeDecodeError:
        raise _err(path, "not a text (TOML) file") from None


def _find_workload(path: Path, name: str) -> Path:
    """The workload file: relative to the current directory, then to the grid file; a bare
    name is an experiment in experiments/."""
    for candidate in (Path(name), path.parent / name):
        if candidate.is_file():
            return candidate
    if not name.endswith(".toml") and os.sep not in name:
        from .. import experiments as ex

        try:
            return ex.find(name)
        except ex.ExperimentError:
            pass
    raise _err(path, f"workload {name!r}: no such file (looked in the current directory and beside the grid)")


def _str_list(path: Path, where: str, v: Any) -> List[str]:
    if v is None:
        return []
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) and "=" in x for x in v):
        raise _err(path, f"{where}: expected a list of \"key=value\" strings")
    return list(v)


def _seed_axis(path: Path, axes: Dict[str, Any], doc: Dict[str, Any]) -> Optional[List[int]]:
    from ..runs import base_seed, seeds

    if "seeds" in axes and "runs" in axes:
        raise _err(path, "[axes]: give seeds (a list) or runs (a count), not both")
    if "seeds" in axes:
        v = axes["seeds"]
        if not isinstance(v, list) or not v or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in v):
            raise _err(path, "[axes] seeds: expected a non-empty list of non-negative integers")
        return list(v)
    if "runs" in axes:
        n = axes["runs"]
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100000:
            raise _err(path, f"[axes] runs: expected an integer >= 1, got {n!r}")
        return seeds(base_seed(doc), n)
    return None


def _workload(path: Path, doc: Dict[str, Any], scale: float) -> Tuple[str, str, Dict[str, Any], Any]:
    """(TOML text, source, workload document, experiment or None)."""
    wl = doc.get("workload")
    if not isinstance(wl, str) or not wl:
        raise _err(path, "missing workload = \"PATH\" (a workload or experiment file)")
    wpath = _find_workload(path, wl)
    wdoc = _read(wpath)
    exp = None
    if "experiment" in wdoc:
        from .. import experiments as ex

        try:
            exp = ex.load(wpath)
        except ex.ExperimentError as e:
            raise GridError(str(e)) from None
        wdoc, source = exp.workload, exp.workload_source
    else:
        source = str(wpath)
    if scale != 1:
        source += f" (scaled 1/{scale:g})"
    try:
        if scale != 1:
            text = tomlio.dumps(scale_workload(wdoc, scale))
        elif exp is not None:
            from ..expruns import workload_text

            text = workload_text(exp)
        else:
            text = wpath.read_text(encoding="utf-8")
    except (TypeError, ValueError) as e:
        raise _err(path, f"workload {wl!r}: {e}") from None
    return text, source, wdoc, exp


def _cell_axes(path: Path, exp: Any, axes: Dict[str, Any]) -> Dict[str, List[str]]:
    if exp is None:
        for k in CELL_AXES:
            if k in axes:
                raise _err(path, f"[axes] {k}: only an experiment file has rows and variants")
        return {}
    known = {"row": [r.name for r in exp.rows], "variant": [v.name for v in exp.variants]}
    out = {"row": axes.get("row", known["row"]), "variant": axes.get("variant", [exp.baseline])}
    for k, values in out.items():
        if not isinstance(values, list) or not values:
            raise _err(path, f"[axes] {k}: expected a non-empty list of names")
        for v in values:
            if v not in known[k]:
                raise _err(path, f"[axes] {k}: {v!r} is not a {k} of {exp.name} ({', '.join(known[k])})")
    return out


def _axis_values(path: Path, axes: Dict[str, Any]) -> Dict[str, List[Any]]:
    out: Dict[str, List[Any]] = {}
    for k, v in axes.items():
        if k in SEED_AXES or k in CELL_AXES:
            continue
        if any(not seg for seg in k.split(".")) or k == "seed":
            raise _err(path, f"[axes] {k!r}: expected a --set key such as kernel.swappiness (seeds go in `seeds`)")
        if not isinstance(v, list) or not v:
            raise _err(path, f"[axes] {k}: expected a non-empty list of values")
        for x in v:
            try:
                toml_value(x)
            except ValueError as e:
                raise _err(path, f"[axes] {k}: {e}") from None
        out[k] = v
    return out


def load(path: "str | os.PathLike[str]", scale: Optional[float] = None) -> Grid:
    """Read a grid file and expand its points. ``scale`` (``--scale``) overrides the file's."""
    path = Path(path)
    doc = _read(path)
    for k in doc:
        if k not in TOP_KEYS:
            raise _err(path, f"unknown key {k!r} (expected {', '.join(TOP_KEYS)})")
    if scale is None:
        scale = doc.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale < float("inf"):
        raise _err(path, f"scale: expected a positive number, got {scale!r}")
    raw_axes = doc.get("axes", {})
    if not isinstance(raw_axes, dict):
        raise _err(path, "axes: expected a table [axes] of key = [values]")
    raw_axes = _flatten_axes(path, raw_axes)
    base_set = _str_list(path, "set", doc.get("set"))
    name = doc.get("name", path.stem)
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise _err(path, f"name: expected a plain name, got {name!r}")

    text, source, wdoc, exp = _workload(path, doc, float(scale))
    cells = _cell_axes(path, exp, raw_axes)
    values = _axis_values(path, raw_axes)
    seed_list = _seed_axis(path, raw_axes, wdoc)
    axes: Dict[str, List[Any]] = {**cells, **values}
    if seed_list is not None:
        axes["seed"] = seed_list
    points = expand(exp, axes, base_set, float(scale))
    return Grid(path=path, name=name, text=text, source=source, axes=axes, points=points,
                scale=float(scale), experiment=exp.name if exp else None, base_set=base_set)


def expand(exp: Any, axes: Dict[str, List[Any]], base_set: Sequence[str], scale: float) -> List[Point]:
    """The product of the axes; each point's overrides: the experiment cell's, the grid's
    ``set``, one per axis, and the seed last (so that it wins)."""
    names = list(axes)
    points = []
    for i, combo in enumerate(itertools.product(*(axes[n] for n in names))):
        values = dict(zip(names, combo))
        ovs: List[str] = []
        if exp is not None:
            ovs += exp.overrides(values["row"], values["variant"])
        ovs += list(base_set)
        ovs += [f"{k}={toml_value(v)}" for k, v in values.items() if k not in CELL_AXES and k != "seed"]
        if "seed" in values:
            ovs.append(f"seed={values['seed']}")
        points.append(Point(i, values, scale_overrides(ovs, scale)))
    return points
