"""Reading the kernel's counters and knobs."""

from __future__ import annotations

import os
import platform
from typing import Dict, Optional

from .journal import Journal

PAGE = 4096

# kernel-algorithms.md §8: the knobs a workload names, and where they live.
KNOBS = {
    "page_cluster": "/proc/sys/vm/page-cluster",
    "swappiness": "/proc/sys/vm/swappiness",
    "vma_ra_enabled": "/sys/kernel/mm/swap/vma_ra_enabled",
    "zswap": "/sys/module/zswap/parameters/enabled",
    "dirty_ratio": "/proc/sys/vm/dirty_ratio",
    "dirty_bytes": "/proc/sys/vm/dirty_bytes",
    "dirty_background_ratio": "/proc/sys/vm/dirty_background_ratio",
    "dirty_background_bytes": "/proc/sys/vm/dirty_background_bytes",
    "dirty_expire_centisecs": "/proc/sys/vm/dirty_expire_centisecs",
    "dirty_writeback_centisecs": "/proc/sys/vm/dirty_writeback_centisecs",
}
# The knobs of the disk holding file mappings' data files (its request queue).
READ_AHEAD_KB = "/sys/block/{disk}/queue/read_ahead_kb"
MGLRU = "/sys/kernel/mm/lru_gen/enabled"


def read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def read_kv(path: str) -> Dict[str, int]:
    """``name value`` lines (/proc/vmstat, memory.stat, memory.events)."""
    out: Dict[str, int] = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                try:
                    out[parts[0]] = int(parts[1])
                except ValueError:
                    pass
    return out


def vmstat() -> Dict[str, int]:
    return read_kv("/proc/vmstat")


def set_knob(journal: Journal, path: str, value: str) -> None:
    """Write a knob, journalling its old value first (restored on every exit path)."""
    old = read(path)
    # booleans read back as Y/N or true/false: compare them as booleans
    if old == value or (_bool(old) is not None and _bool(old) == _bool(value)):
        return
    journal.push({"op": "knob", "path": path, "value": old})
    with open(path, "w") as f:
        f.write(value)


def set_dirty_limit(journal: Journal, ratio_knob: str, bytes_knob: str, ratio: int, nbytes: int) -> None:
    """Set one dirty limit, given as a ratio or (when ``nbytes`` > 0) in bytes. The two files of
    a pair are one setting: writing either zeroes the other, and the kernel refuses to write
    a bytes value of 0 (below its 2-page minimum). So the journal records whichever form was in
    effect before, and restoring it zeroes the other form again."""
    old_ratio, old_bytes = read(KNOBS[ratio_knob]), read(KNOBS[bytes_knob])
    if nbytes > 0:
        path, value = KNOBS[bytes_knob], str(nbytes)
    else:
        path, value = KNOBS[ratio_knob], str(ratio)
    if read(path) == value and (nbytes > 0 or old_bytes == "0"):
        return
    if old_bytes != "0":
        journal.push({"op": "knob", "path": KNOBS[bytes_knob], "value": old_bytes})
    else:
        journal.push({"op": "knob", "path": KNOBS[ratio_knob], "value": old_ratio})
    with open(path, "w") as f:
        f.write(value)


def _bool(v: str) -> Optional[bool]:
    v = v.strip().lower()
    if v in ("1", "y", "yes", "true", "on"):
        return True
    if v in ("0", "n", "no", "false", "off"):
        return False
    return None


def knob_snapshot() -> Dict[str, Optional[str]]:
    """Current values of every knob the runner may change (for reports and tests)."""
    out: Dict[str, Optional[str]] = {}
    for k, p in KNOBS.items():
        try:
            out[k] = read(p)
        except OSError:
            out[k] = None
    return out


def block_dev_of(path: str) -> Optional[str]:
    """The whole-disk block device name holding ``path`` (e.g. "vda"), or None."""
    st = os.stat(path)
    maj, mi = os.major(st.st_dev), os.minor(st.st_dev)
    sysdir = f"/sys/dev/block/{maj}:{mi}"
    if not os.path.exists(sysdir):
        return None
    real = os.path.realpath(sysdir)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


def rotational(dev: str) -> Optional[bool]:
    try:
        return read(f"/sys/block/{dev}/queue/rotational") == "1"
    except OSError:
        return None


def disk_stat(dev: str) -> Dict[str, int]:
    """/sys/block/DEV/stat: reads, read sectors, time spent reading (ms), writes, written
    sectors, io_ticks (ms)."""
    f = read(f"/sys/block/{dev}/stat").split()
    v = [int(x) for x in f]
    return {"reads": v[0], "read_sectors": v[2], "read_ticks_ms": v[3], "writes": v[4], "write_sectors": v[6],
            "io_ticks_ms": v[9]}


def host_info() -> Dict[str, str]:
    u = platform.uname()
    return {"kernel": u.release, "hostname": u.node, "machine": u.machine}
