"""The results store on disk: one JSON file per result, named by its key.

```
STORE/swaplab-store.json          marks the directory as a store (format version)
STORE/points/ab/abcdef....json    one record per result: key, status, error, result
STORE/sweeps/NAME.json            a sweep's manifest: its grid and every point's key and axes
STORE/results.parquet             the tidy table of all of it (store/table.py)
```

Every record is written atomically (``io.write_atomic``: temporary file, then rename), one per
point as soon as that point finishes, so a sweep stopped at any moment — Ctrl-C, a crash, a
killed process — leaves complete records and nothing else; the next run finds them and runs
only what is missing. Temporary files (``.NAME.tmp``) that a killed writer left behind are
never read as records. Records are not fsynced one by one (two disk flushes per point cost
more than a small simulation: 7 ms a point on this project's test machine); instead every
record ends with ``RECORD_END`` and a record that does not (a file torn by a power loss before
the page cache reached the disk) counts as missing and is run again, and the sweep flushes the
file system once at its end (``Store.flush``). Two processes writing the same key write the same bytes (a simulation
is deterministic), so concurrent sweeps over one store do not conflict.

A record's ``status`` is ``ok`` (the result is kept) or ``failed`` (the error is kept; a failed
point is tried again by the next sweep, since a crash may have been transient).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from ..io import write_atomic, write_json_atomic

FORMAT = 1
MARKER = "swaplab-store.json"
RECORD_END = b"}\n"
STALE_TMP_S = 3600


class StoreError(ValueError):
    """A path that is not a store, or a store record that cannot be read."""


class Store:
    def __init__(self, root: "str | os.PathLike[str]", create: bool = False):
        self.root = Path(root)
        marker = self.root / MARKER
        if not marker.is_file():
            if not create:
                raise StoreError(f"{self.root}: not a swaplab results store (no {MARKER}; "
                                 "`swaplab sweep --out DIR` creates one)")
            if self.root.exists() and not self.root.is_dir():
                raise StoreError(f"{self.root}: exists and is not a directory")
            if self.root.is_dir() and any(p for p in self.root.iterdir() if p.name != MARKER):
                raise StoreError(f"{self.root}: a directory that is not a results store; choose another --out")
            try:
                (self.root / "points").mkdir(parents=True, exist_ok=True)
                (self.root / "sweeps").mkdir(exist_ok=True)
                write_json_atomic(marker, {"swaplab_store": FORMAT})
            except OSError as e:
                raise StoreError(f"{self.root}: cannot create the store: {e.strerror or e}") from None
        self.points_dir = self.root / "points"
        self.sweeps_dir = self.root / "sweeps"
        self.table_path = self.root / "results.parquet"

    @staticmethod
    def is_store(path: "str | os.PathLike[str]") -> bool:
        return (Path(path) / MARKER).is_file()

    # -- point records -------------------------------------------------------------------
    def path_of(self, key: str) -> Path:
        return self.points_dir / key[:2] / f"{key}.json"

    def status(self, key: str) -> Optional[str]:
        """'ok', 'failed' or None (not in the store, or torn). Reads only the record's first
        and last bytes."""
        try:
            with open(self.path_of(key), "rb") as f:
                head = f.read(512)
                f.seek(max(0, os.fstat(f.fileno()).st_size - len(RECORD_END)))
                if f.read() != RECORD_END:
                    return None
        except FileNotFoundError:
            return None
        i = head.find(b'"status": "')
        return head[i + 11:].split(b'"', 1)[0].decode() if i >= 0 else None

    def get(self, key: str) -> Optional[Dict[str, Any]]:
        """The record, or None when there is none or it is torn (it will be run again)."""
        try:
            with open(self.path_of(key), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except ValueError:
            return None

    def put_ok(self, key: str, result_json: str, meta: Dict[str, Any]) -> None:
        """Record a result given as the JSON text the simulator produced (kept byte for byte,
        so that results from any engine compare bit for bit)."""
        head = {"key": key, "status": "ok", **meta}
        text = json.dumps(head, allow_nan=False)[:-1] + ', "result": ' + result_json.strip() + "}\n"
        self._write(key, text)

    def put_failed(self, key: str, error: str, meta: Dict[str, Any]) -> None:
        head = {"key": key, "status": "failed", "error": error, **meta}
        self._write(key, json.dumps(head, indent=1, allow_nan=False) + "\n")

    def _write(self, key: str, text: str) -> None:
        path = self.path_of(key)
        path.parent.mkdir(exist_ok=True)
        write_atomic(path, text, durable=False)

    def flush(self) -> None:
        """Make every record written so far durable (one flush instead of one per record)."""
        os.sync()

    def keys(self) -> Iterator[str]:
        """Every record's key (temporary files of a killed writer are not records)."""
        if not self.points_dir.is_dir():
            return
        for sub in sorted(self.points_dir.iterdir()):
            if sub.is_dir():
                for p in sorted(sub.glob("*.json")):
                    if not p.name.startswith("."):
                        yield p.stem

    def remove_stale_temporaries(self, older_than_s: float = STALE_TMP_S) -> int:
        """Delete what killed writers left behind (old enough not to be a live writer's)."""
        n, now = 0, time.time()
        for p in self.points_dir.glob("*/.*.tmp"):
            try:
                if now - p.stat().st_mtime > older_than_s:
                    p.unlink()
                    n += 1
            except FileNotFoundError:
                pass
        return n

    # -- sweeps --------------------------------------------------------------------------
    def sweep_path(self, name: str) -> Path:
        return self.sweeps_dir / f"{name}.json"

    def put_sweep(self, manifest: Dict[str, Any]) -> None:
        write_json_atomic(self.sweep_path(manifest["name"]), manifest, indent=1)

    def sweeps(self) -> List[Dict[str, Any]]:
        """Every sweep's manifest, oldest first."""
        out = []
        for p in sorted(self.sweeps_dir.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name)):
            if p.name.startswith("."):
                continue
            try:
                out.append(json.loads(p.read_text(encoding="utf-8")))
            except ValueError as e:
                raise StoreError(f"{p}: not a valid sweep manifest: {e}") from None
        return out

    def sweep(self, name: Optional[str] = None) -> Dict[str, Any]:
        """A sweep's manifest by name; without a name, the latest one."""
        if name is not None:
            p = self.sweep_path(name)
            if not p.is_file():
                names = ", ".join(s["name"] for s in self.sweeps()) or "none"
                raise StoreError(f"{self.root}: no sweep named {name!r} (sweeps: {names})")
            return json.loads(p.read_text(encoding="utf-8"))
        all_sweeps = self.sweeps()
        if not all_sweeps:
            raise StoreError(f"{self.root}: the store holds no sweep")
        return all_sweeps[-1]
