"""Experiment files (``experiments/NAME.toml``): one published table, its workload, its
variants, and the published numbers. The format is documented in docs/experiments.md."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from . import metrics


class ExperimentError(ValueError):
    """A mistake in an experiment file, or an experiment that cannot be found."""


@dataclass
class Variant:
    name: str
    set: List[str]
    description: str = ""


@dataclass
class MetricRow:
    """One printed row: a workload row measured by one metric, with its published numbers."""

    row: str            # the [[row]] it belongs to (selects the workload overrides)
    label: str          # printed name (the row name, plus the metric when a row has several)
    metric: str
    tasks: metrics.TaskFilter
    unit: str
    published: Dict[str, Optional[float]]
    source: str = ""


@dataclass
class Row:
    name: str
    set: List[str]


@dataclass
class Experiment:
    name: str
    path: Path
    title: str
    source: str
    baseline: str
    notes: str
    workload: Dict[str, Any]          # the parsed workload document
    workload_source: str              # where it came from (for error messages)
    set: List[str]
    variants: List[Variant]
    rows: List[Row]
    metric_rows: List[MetricRow]
    extra: Dict[str, Any] = field(default_factory=dict)
    #: Simulations per cell, seeds seed, seed+1, ... (``runs`` in [experiment]); a metric is
    #: the mean over them unless it names an aggregate (``elapsed_s:std``, ``:min``, ``:max``).
    runs: int = 1

    @property
    def has_published(self) -> bool:
        """Whether the file holds any published number (host-only experiments have none)."""
        return any(v is not None for mr in self.metric_rows for v in mr.published.values())

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def overrides(self, row: str, variant: str) -> List[str]:
        """Overrides of one cell: the experiment's, then the row's, then the variant's."""
        r = next(x for x in self.rows if x.name == row)
        return list(self.set) + list(r.set) + list(self.variant(variant).set)


def _err(path: Union[str, Path], msg: str) -> ExperimentError:
    return ExperimentError(f"{path}: {msg}")


def _str_list(path: Path, where: str, v: Any) -> List[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _err(path, f"{where}: expected a list of \"key=value\" strings")
    for x in v:
        if "=" not in x:
            raise _err(path, f"{where}: override {x!r} must look like key=value")
    return list(v)


def _number(path: Path, where: str, v: Any) -> Optional[float]:
    if v is None or (isinstance(v, str) and v.strip() in ("", "-")):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _err(path, f"{where}: expected a number, got {v!r}")
    return float(v)


def load(path: Union[str, Path]) -> Experiment:
    path = Path(path)
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise _err(path, "no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise _err(path, f"not valid TOML: {e}") from None
    except RecursionError:
        raise _err(path, "not valid TOML: arrays or tables nested too deeply") from None

    known_top = {"experiment", "workload", "variant", "row"}
    for k in doc:
        if k not in known_top:
            raise _err(path, f"unknown top-level key {k!r} (expected {', '.join(sorted(known_top))})")
    exp = doc.get("experiment")
    if not isinstance(exp, dict):
        raise _err(path, "missing [experiment] table")
    known_exp = {"name", "title", "source", "metric", "unit", "tasks", "baseline", "notes", "set", "workload", "runs"}
    for k in exp:
        if k not in known_exp:
            raise _err(path, f"[experiment]: unknown key {k!r} (expected {', '.join(sorted(known_exp))})")
    name = exp.get("name", path.stem)

    # The workload: inline table or a file relative to the experiment.
    wl = doc.get("workload", exp.get("workload"))
    if isinstance(wl, str):
        wpath = (path.parent / wl).resolve()
        try:
            with open(wpath, "rb") as f:
                workload = tomllib.load(f)
        except FileNotFoundError:
            raise _err(path, f"workload file {wl!r} not found (looked at {wpath})") from None
        except tomllib.TOMLDecodeError as e:
            raise _err(wpath, f"not valid TOML: {e}") from None
        except RecursionError:
            raise _err(wpath, "not valid TOML: arrays or tables nested too deeply") from None
        wsource = os.path.relpath(wpath)
    elif isinstance(wl, dict):
        workload, wsource = wl, f"{path} [workload]"
    else:
        raise _err(path, "missing workload: give a [workload] table or workload = \"file.toml\"")

    variants: List[Variant] = []
    for i, v in enumerate(doc.get("variant", [])):
        if not isinstance(v, dict) or "name" not in v:
            raise _err(path, f"[[variant]] #{i + 1}: needs a name")
        extra = set(v) - {"name", "set", "description"}
        if extra:
            raise _err(path, f"[[variant]] {v['name']!r}: unknown key(s) {', '.join(sorted(extra))}")
        variants.append(Variant(str(v["name"]), _str_list(path, f"variant {v['name']!r} set", v.get("set")),
                                str(v.get("description", ""))))
    if not variants:
        raise _err(path, "needs at least one [[variant]]")
    vnames = [v.name for v in variants]
    if len(set(vnames)) != len(vnames):
        raise _err(path, "duplicate variant names")
    baseline = exp.get("baseline", vnames[0])
    if baseline not in vnames:
        raise _err(path, f"baseline {baseline!r} is not a variant (variants: {', '.join(vnames)})")

    default_metric = exp.get("metric", "elapsed_s")
    default_tasks = exp.get("tasks")
    default_unit = exp.get("unit")
    rows: List[Row] = []
    metric_rows: List[MetricRow] = []
    raw_rows = doc.get("row", [{"name": "all"}])
    for i, r in enumerate(raw_rows):
        if not isinstance(r, dict) or "name" not in r:
            raise _err(path, f"[[row]] #{i + 1}: needs a name")
        rname = str(r["name"])
        extra = set(r) - {"name", "set", "metric", "tasks", "unit", "published", "source"}
        if extra:
            raise _err(path, f"[[row]] {rname!r}: unknown key(s) {', '.join(sorted(extra))}")
        if any(x.name == rname for x in rows):
            raise _err(path, f"duplicate row name {rname!r}")
        rows.append(Row(rname, _str_list(path, f"row {rname!r} set", r.get("set"))))
        metric = r.get("metric", default_metric)
        tasks = r.get("tasks", default_tasks)
        mlist = [metric] if isinstance(metric, str) else list(metric)
        published = r.get("published", {})
        if not isinstance(published, dict):
            raise _err(path, f"row {rname!r}: published must be a table of variant = value")
        for m in mlist:
            try:
                from .runs import split_aggregate

                base_m = split_aggregate(m)[0]
                if base_m not in ("dr_stall_max_s", "dr_pages_per_call_max"):
                    metrics.check(base_m)
            except metrics.MetricError as e:
                raise _err(path, f"row {rname!r}: {e}") from None
            pub = published.get(m, {}) if len(mlist) > 1 else published
            if not isinstance(pub, dict):
                raise _err(path, f"row {rname!r}: published.{m} must be a table of variant = value")
            for vn in pub:
                if vn not in vnames:
                    raise _err(path, f"row {rname!r}: published value for unknown variant {vn!r}")
            values = {vn: _number(path, f"row {rname!r} published {vn}", pub.get(vn)) for vn in vnames}
            unit = r.get("unit", default_unit if len(mlist) == 1 and metric == default_metric and default_unit
                         else metrics.unit_of(split_aggregate(m)[0]))
            label = rname if len(mlist) == 1 else f"{rname} {m}"
            metric_rows.append(MetricRow(rname, label, m, tasks, unit or "", values, str(r.get("source", ""))))

    runs = exp.get("runs", 1)
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 1000:
        raise _err(path, f"[experiment] runs: expected an integer 1..1000, got {runs!r}")
    return Experiment(
        runs=runs,
        name=str(name), path=path, title=str(exp.get("title", name)), source=str(exp.get("source", "")),
        baseline=baseline, notes=str(exp.get("notes", "")), workload=workload, workload_source=wsource,
        set=_str_list(path, "[experiment] set", exp.get("set")), variants=variants, rows=rows,
        metric_rows=metric_rows,
    )


def find_dir(explicit: Optional[str] = None) -> Path:
    """The experiments directory: ``--dir``, ``$SWAPLAB_EXPERIMENTS``, ``./experiments`` or the
    nearest parent's, or the source checkout this package was installed from in editable mode."""
    if explicit:
        p = Path(explicit)
        if not p.is_dir():
            raise ExperimentError(f"{explicit}: not a directory")
        return p
    env = os.environ.get("SWAPLAB_EXPERIMENTS")
    if env:
        if not Path(env).is_dir():
            raise ExperimentError(f"SWAPLAB_EXPERIMENTS={env}: not a directory")
        return Path(env)
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "experiments").is_dir() and any((d / "experiments").glob("*.toml")):
            return d / "experiments"
    src = Path(__file__).resolve().parents[2] / "experiments"
    if src.is_dir():
        return src
    raise ExperimentError("no experiments/ directory here or above; run from the swaplab checkout or pass --dir")


def discover(directory: Path) -> List[Path]:
    return sorted(p for p in directory.glob("*.toml") if p.is_file())


def find(name: str, directory: Optional[str] = None) -> Path:
    """An experiment by name (``hugh2012-ssd``) or path (``experiments/x.toml``)."""
    if name.endswith(".toml") or os.sep in name:
        p = Path(name)
        if not p.is_file():
            raise ExperimentError(f"{name}: no such experiment file")
        return p
    d = find_dir(directory)
    p = d / f"{name}.toml"
    if p.is_file():
        return p
    available = ", ".join(x.stem for x in discover(d)) or "none"
    raise ExperimentError(f"no experiment named {name!r} in {d} (available: {available})")


def cells(exp: Experiment) -> List[Tuple[str, str]]:
    """Every (row, variant) pair."""
    return [(r.name, v.name) for r in exp.rows for v in exp.variants]


NOISE = 0.05
RULE = (
    "effect = ratio to the baseline variant - 1 (same row). A cell agrees when both effects are "
    f"within +-{NOISE:.0%} (no effect either way), or when they have the same sign and "
    "simulated effect / published effect is in [0.5, 2]; otherwise it differs."
)


def verdict(published_ratio: Optional[float], simulated_ratio: Optional[float]) -> str:
    """'agrees' or 'differs' under ``RULE``; 'n/a' without a published ratio. A missing
    simulated figure (the model produced nothing to measure) differs."""
    if published_ratio is None:
        return "n/a"
    if simulated_ratio is None:
        return "differs"
    p, s = published_ratio - 1.0, simulated_ratio - 1.0
    if abs(p) < NOISE and abs(s) < NOISE:
        return "agrees"
    if p == 0 or s == 0 or (p > 0) != (s > 0):
        return "differs"
    return "agrees" if 0.5 <= s / p <= 2.0 else "differs"


def names(exps: Sequence[Experiment]) -> List[str]:
    return [e.name for e in exps]
