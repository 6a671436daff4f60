"""What ``swaplab report`` was given, and the report it makes.

Recognised by shape, since every command's JSON is distinct:

* a run (``swaplab run --json``, ``host run --json``): ``schema`` + ``vmstat`` + ``tasks``;
  the runs of an experiment file (``swaplab run EXPERIMENT --json``): one section per cell
* a store record (``STORE/points/../KEY.json``): ``status`` + ``result`` -> that run
* a results store directory, or a sweep manifest (``STORE/sweeps/NAME.json``) or the summary of
  ``swaplab sweep --json OUT``: the sweep (``--sweep NAME`` picks one; default the latest)
* a reproduce comparison: ``experiment`` + ``rows``, or ``experiments`` (``--all``)
* a compare: ``sim`` + ``host`` + ``comparison``, or ``cells`` + ``ratios`` (an experiment file)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from ..store import Store, StoreError
from ..store import table as tbl
from . import from_compare, from_reproduce, from_run, from_sweep
from .figures import Report


class ReportError(ValueError):
    """An input the report cannot use: one line naming the file and what was expected."""


def _load_json(path: Path) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not a JSON result ({e})") from None
    except OSError as e:
        raise ReportError(f"{path}: {e.strerror or e}") from None
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a swaplab result (expected a JSON object)")
    return doc


def _sweep_report(store: Store, name: Optional[str], metrics: Optional[Sequence[str]]) -> Report:
    try:
        manifest = store.sweep(name)
        df = tbl.load(store, manifest["name"])
    except StoreError as e:
        raise ReportError(str(e)) from None
    subtitle = [f"store {store.root}", f"grid {manifest.get('grid')}, engine {manifest.get('engine')}, "
                f"swaplab {manifest.get('swaplab_version')}"]
    return Report(f"Sweep {manifest['name']}", subtitle, from_sweep.sections(manifest, df, metrics))


def _store_of(path: Path, doc: Dict[str, Any]) -> Store:
    root = Path(doc["store"]) if "store" in doc else path.resolve().parent.parent
    try:
        return Store(root)
    except StoreError as e:
        raise ReportError(f"{path}: the sweep's store: {e}") from None


def build(path: "str | os.PathLike[str]", sweep: Optional[str] = None,
          metrics: Optional[Sequence[str]] = None) -> Report:
    path = Path(path)
    if path.is_dir():
        if not Store.is_store(path):
            raise ReportError(f"{path}: a directory that is not a results store")
        return _sweep_report(Store(path), sweep, metrics)
    doc = _load_json(path)
    if doc.get("kind") == "sweep" and "points" in doc:                       # a manifest
        return _sweep_report(_store_of(path, doc), sweep or doc.get("name"), metrics)
    if "sweep" in doc and "store" in doc and "ran" in doc:                   # sweep --json OUT
        return _sweep_report(_store_of(path, doc), sweep or doc["sweep"], metrics)
    if "status" in doc and "key" in doc:                                     # a store record
        if doc.get("status") != "ok":
            raise ReportError(f"{path}: a failed point ({doc.get('error')}); nothing to draw")
        doc = doc["result"]
    if doc.get("kind") == "experiment-runs" and isinstance(doc.get("runs"), list):   # run EXPERIMENT --json
        sections = [sec for r in doc["runs"]
                    for sec in from_run.sections(r["result"], f"{r['row']} / {r['variant']}", compact=True)]
        return Report(f"Runs of experiment {doc.get('experiment')}", [str(path)], sections)
    if "vmstat" in doc and "tasks" in doc and "schema" in doc:
        sub = [f"{doc.get('kind', 'simulation')}, seed {doc.get('seed')}, swaplab {doc.get('swaplab_version')}", str(path)]
        return Report(f"Run {doc.get('name') or path.stem}", sub, from_run.sections(doc))
    if "experiments" in doc or ("experiment" in doc and "rows" in doc):
        n = len(doc.get("experiments", [doc]))
        return Report("Reproduced tables" if n > 1 else f"Reproduced table {doc.get('experiment')}",
                      [str(path), f"swaplab {doc.get('swaplab_version')}"], from_reproduce.sections(doc))
    if ("sim" in doc and "host" in doc) or ("cells" in doc and "ratios" in doc):
        title = f"Simulator vs host: {doc.get('experiment') or doc.get('sim', {}).get('name') or path.stem}"
        return Report(title, [str(path)], from_compare.sections(doc))
    raise ReportError(f"{path}: not a result swaplab can report on (expected the JSON of run, host run, "
                      "reproduce, compare or sweep, a store record, or a results store directory)")
