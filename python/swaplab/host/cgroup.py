"""The memory cgroup a host run's workers live in (v1 or v2, detected at run time)."""

from __future__ import annotations

import os
from typing import Dict, Optional

from .errors import PreconditionError
from .journal import Journal
from .sysfs import PAGE, read, read_kv

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"


def detect() -> Optional[int]:
    """1 if the v1 memory controller is mounted, 2 if the v2 hierarchy has it, else None."""
    if os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        return 1
    ctl = os.path.join(V2_ROOT, "cgroup.controllers")
    if os.path.exists(ctl) and "memory" in read(ctl).split():
        return 2
    return None


class MemCgroup:
    """A fresh memory cgroup, journalled for removal."""

    def __init__(self, journal: Journal, name: str, limit_bytes: int, swappiness: int):
        self.version = detect()
        if self.version is None:
            raise PreconditionError("no memory cgroup controller: neither cgroup v1 at /sys/fs/cgroup/memory nor cgroup v2 with memory enabled")
        root = V1_ROOT if self.version == 1 else V2_ROOT
        self.path = os.path.join(root, name)
        self.limit_bytes = limit_bytes
        if self.version == 2:
            sub = read(os.path.join(root, "cgroup.subtree_control")).split()
            if "memory" not in sub:
                raise PreconditionError(f"cgroup v2: the memory controller is not enabled in {root}/cgroup.subtree_control")
        if os.path.exists(self.path):
            raise PreconditionError(f"cgroup {self.path} already exists (another swaplab run?)")
        journal.push({"op": "rmdir", "path": self.path})
        os.mkdir(self.path)
        if self.version == 1:
            self._w("memory.limit_in_bytes", str(limit_bytes))
            # per-memcg swappiness is what limit reclaim uses in v1 (mem_cgroup_swappiness)
            self._w("memory.swappiness", str(swappiness))
        else:
            self._w("memory.max", str(limit_bytes))
            self._w("memory.swap.max", "max")
        self.oom0 = self.oom_kills()

    def _w(self, f: str, v: str) -> None:
        with open(os.path.join(self.path, f), "w") as fh:
            fh.write(v)

    def add(self, pid: int) -> None:
        self._w("cgroup.procs", str(pid))

    def stat(self) -> Dict[str, int]:
        return read_kv(os.path.join(self.path, "memory.stat"))

    def oom_kills(self) -> int:
        if self.version == 1:
            return read_kv(os.path.join(self.path, "memory.oom_control")).get("oom_kill", 0)
        return read_kv(os.path.join(self.path, "memory.events")).get("oom_kill", 0)

    def usage_bytes(self) -> int:
        f = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        return int(read(os.path.join(self.path, f)))

    def swap_bytes(self) -> int:
        """Swap currently charged to the cgroup."""
        if self.version == 1:
            return self.stat().get("swap", 0)
        return int(read(os.path.join(self.path, "memory.swap.current")))

    def lru_pages(self, st: Optional[Dict[str, int]] = None) -> Dict[str, int]:
        st = st if st is not None else self.stat()
        if self.version == 1:
            g = lambda k: st.get(k, 0) // PAGE  # noqa: E731 - bytes in v1
            return {"nr_active_anon": g("active_anon"), "nr_inactive_anon": g("inactive_anon"),
                    "nr_active_file": g("active_file"), "nr_inactive_file": g("inactive_file"),
                    "nr_dirty": g("dirty"), "nr_writeback": g("writeback"), "swap": g("swap")}
        g = lambda k: st.get(k, 0) // PAGE  # noqa: E731 - bytes in v2 too
        return {"nr_active_anon": g("active_anon"), "nr_inactive_anon": g("inactive_anon"),
                "nr_active_file": g("active_file"), "nr_inactive_file": g("inactive_file"),
                "nr_dirty": g("file_dirty"), "nr_writeback": g("file_writeback"),
                "swap": self.swap_bytes() // PAGE}
