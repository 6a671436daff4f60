"""``/sys/kernel/debug/lru_gen`` as the simulated kernel would have shown it at each sample.

The simulator records MGLRU's generations in the time series (``timeseries.lru_gen``: per
sample, ``[seq, age_ms, anon_pages, file_pages]`` for every generation from the oldest the file
lists to ``max_seq``). This module prints them in the kernel's own format
(``lru_gen_seq_show`` in mm/vmscan.c, without ``full``), so that a dump taken on a real machine
with ``cat /sys/kernel/debug/lru_gen`` can be put beside it and compared line by line:

    memcg     1 /
     node     0
              5       1234        100         20
              ...

One lruvec is modelled: the root memory cgroup on a machine without a limit, the workload's
cgroup under ``machine.memcg_limit`` (id 2, ``/swaplab``; the host runner's is
``/swaplab-PID-N``); node 0. Each
sample is preceded by a comment line with its virtual time, which the kernel file does not
have.
"""

from __future__ import annotations

from typing import Any, Dict, List


def _memcg_line(raw: Dict[str, Any]) -> str:
    cfg = raw.get("config") or {}
    limited = bool((cfg.get("machine") or {}).get("memcg_limit"))
    # seq_printf(m, "memcg %llu %s\n", mem_cgroup_id(memcg), path): the root is id 1, "/".
    return "memcg 2 /swaplab\n" if limited else "memcg 1 /\n"  # host runs: /swaplab-PID-N


def dump_samples(raw: Dict[str, Any]) -> str:
    """Every sample of ``timeseries.lru_gen`` in the debugfs format."""
    ts = raw.get("timeseries") or {}
    samples: List[List[List[int]]] = ts.get("lru_gen") or []
    times: List[int] = ts.get("t_ns") or []
    head = _memcg_line(raw)
    out: List[str] = []
    for i, rows in enumerate(samples):
        t = times[i] / 1e9 if i < len(times) else float("nan")
        out.append(f"# t = {t:.3f} s\n")
        out.append(head)
        out.append(f" node {0:5d}\n")
        for seq, age_ms, anon, file in rows:
            # " %10lu %10u" then " %10lu%c" per type (the mark is ' ' outside lru_gen_full)
            out.append(f" {seq:10d} {age_ms:10d} {anon:10d}  {file:10d} \n")
    return "".join(out)
