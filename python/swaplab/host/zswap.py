"""zswap on the host and in the simulator: the same settings on both sides, the same counters.

``swaplab compare --zswap`` turns zswap on for the host run (the runner's ``zswap`` knob,
journalled and restored) and for the simulation, with the host's module parameters
(``/sys/module/zswap/parameters/``) translated into the workload's ``[zswap]`` overrides:

* ``compressor``, ``accept_threshold_percent``: as they are;
* ``max_pool_percent``: a percentage of the *machine's* RAM in the kernel
  (``zswap_max_pages() = totalram_pages() * max_pool_percent / 100``), while the host run
  confines the workload to a memory cgroup sized like the simulated machine. The simulator
  gets the same pool limit in pages, expressed in its own RAM (rounded to a whole percent,
  at most 100: a pool larger than the memory can never be reached anyway);
* ``store_incompressible``: the kernel stores a page that does not compress as it is since
  6.18 (``zswap_compress``: "store incompressible page as-is") and rejects it before
  (``reject_compress_poor``), so the host's kernel version decides;
* the cgroup hierarchy: ``compare`` simulates the host's (``machine.cgroup_version``) for every
  comparison; for zswap it matters because the pool is charged to the workload's memory
  cgroup only on v2 (``obj_cgroup_charge_zswap`` returns at once on v1), so on a v1 host the
  pool grows outside the limit and the workload keeps all of it for its pages;
* ``shrinker_enabled``: the memory-pressure shrinker (``zswap_shrinker_scan`` from
  ``shrink_slab``) as the host has it (``zswap.shrinker_enabled``). On a cgroup v1 host it
  writes nothing back on either side: its counts are the memcg's zswap statistics, which v1
  never charges.

Counters: the vmstat ones (``zswpin``, ``zswpout``, ``zswpwb``, ``swpin_zero``,
``swpout_zero``) as deltas over the run, and the pool at the end of the run, while the workers
still hold their memory, from ``/proc/meminfo`` (``Zswapped``: the original size of the stored
pages, so stored pages = Zswapped / 4 KiB; ``Zswap``: the pool's size) — debugfs is not
needed, and is often not mounted.
"""

from __future__ import annotations

import math
import os
import platform
import re
from typing import Any, Dict, List, Optional

PARAMS = "/sys/module/zswap/parameters"
VMSTAT = ("zswpin", "zswpout", "zswpwb", "swpin_zero", "swpout_zero")
#: Counters compared by ``swaplab compare --zswap`` besides the vmstat ones: the store's
#: debugfs figures at the end of the run.
STORE = ("stored_pages", "pool_total_size")
PAGE = 4096


def params() -> Dict[str, str]:
    """The host's zswap module parameters (empty when zswap is not built in)."""
    out: Dict[str, str] = {}
    if not os.path.isdir(PARAMS):
        return out
    for name in os.listdir(PARAMS):
        try:
            with open(os.path.join(PARAMS, name)) as f:
                out[name] = f.read().strip()
        except OSError:
            pass
    return out


def _kernel_at_least(release: str, major: int, minor: int) -> bool:
    m = re.match(r"(\d+)\.(\d+)", release)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (major, minor)


def _meminfo_kb(*keys: str) -> Dict[str, int]:
    out = {k: 0 for k in keys}
    with open("/proc/meminfo") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in out:
                out[name] = int(rest.split()[0])
    return out


def host_total_bytes() -> int:
    return _meminfo_kb("MemTotal")["MemTotal"] * 1024


def sim_overrides(p: Dict[str, str], sim_ram_bytes: int, host_ram_bytes: int,
                  release: Optional[str] = None) -> List[str]:
    """``--set`` overrides giving the simulation the host's zswap (see the module doc)."""
    release = release or platform.release()
    host_pool = host_ram_bytes * int(p.get("max_pool_percent", "20")) / 100
    pct = min(100, max(1, math.ceil(100 * host_pool / sim_ram_bytes - 1e-9)))
    return ["zswap.enabled=true",
            f"zswap.compressor=\"{p.get('compressor', 'lzo')}\"",
            f"zswap.max_pool_percent={pct}",
            f"zswap.accept_threshold_percent={int(p.get('accept_threshold_percent', '90'))}",
            f"zswap.store_incompressible={'true' if _kernel_at_least(release, 6, 18) else 'false'}",
            f"zswap.shrinker_enabled={'true' if p.get('shrinker_enabled', 'N').upper().startswith('Y') else 'false'}"]


def notes(p: Dict[str, str]) -> List[str]:
    out = []
    if p.get("zpool", "zsmalloc") != "zsmalloc":
        out.append(f"the host's zpool is {p['zpool']!r}; the simulator models zsmalloc")
    return out


def pool_snapshot() -> Dict[str, int]:
    """The store's figures now: stored pages and the pool's bytes (from /proc/meminfo)."""
    kb = _meminfo_kb("Zswap", "Zswapped")
    return {"stored_pages": kb["Zswapped"] * 1024 // PAGE, "pool_total_size": kb["Zswap"] * 1024}


def store_result(snapshot: Dict[str, int]) -> Dict[str, Any]:
    """The host's counterpart of a simulated result's ``store`` entry."""
    return {"name": "zswap", "pool_pages": snapshot["pool_total_size"] // PAGE, "debugfs": dict(snapshot)}
