"""``swaplab calibrate``: measure this machine and write a device preset with provenance.

The preset file (``~/.config/swaplab/devices/NAME.toml`` or ``--out``) has three tables:

* ``[provenance]``: host, kernel, date, method, the measured file system / block device;
* ``[device]``: every field of the simulator's ``DeviceParams`` (crates/core/src/device);
* ``[costs]``: the CPU cost parameters measured here (fields of ``[costs]`` in a workload), the
  reclaim costs scaled to this machine by reclaim_cost.py, a swap-in's own costs by swapin_cost.py,
  a TLB-flush IPI's costs by tlb_cost.py;
* ``[compressor]``: zswap's compressor per 4 KiB page by content (compressor_cost.py), which
  the parser gives to a workload's ``[zswap]``/``[zram]`` using that compressor;
* ``[measured]``: the raw measurements the fit came from.

``device = "calibrated:NAME"`` (for a swap device or ``machine.file_device``) is resolved by
the workload parser itself (crates/core/src/config/calibrated.rs): the ``[device]`` fields
overlay the ``sata-ssd`` preset and ``[costs]`` sets the costs the workload does not set.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from typing import Any, Dict, Optional, Tuple

from .. import _core
from . import compressor_cost, reclaim_cost, swapin_cost, tlb_cost
from .sysfs import block_dev_of, rotational

PRESET_DIR = os.path.expanduser(os.environ.get("SWAPLAB_DEVICES", "~/.config/swaplab/devices"))


def measure(directory: str, file_bytes: int = 256 << 20, seconds: float = 2.0, fault_pages: int = 16384) -> Dict[str, Any]:
    from .swapdev import check_workdir

    check_workdir(directory)  # a missing one is created by calibrate() for the measurement
    # The CPU costs first, in a process that has done nothing else yet, as the host worker's
    # is: after the device phase (its I/O threads, SCHED_FIFO, O_DIRECT buffers) this VM's
    # minor fault measured 5.6-7.5 us against 1.4 us before it and 1.2 us (p50) in a worker.
    faults = json.loads(_core.host_calibrate_faults(directory, fault_pages))
    dev = json.loads(_core.host_calibrate_device(directory, file_bytes, seconds))
    return {"device": dev, "faults": faults}


def _max_sectors_pages(disk: Optional[str]) -> int:
    try:
        with open(f"/sys/block/{disk}/queue/max_sectors_kb") as f:
            return max(1, int(f.read()) // 4)
    except (OSError, ValueError, TypeError):
        return 128


# Measured QD1 table (``measured.device.quantiles``) -> DeviceParams table, per direction.
_TABLES = (("read_access", "rand_read", "r"), ("read_access_sequential", "seq_read", "r"),
           ("read_access_writing", "rand_read_writing", "r"),
           ("read_access_sequential_writing", "seq_read_writing", "r"), ("write_access", "rand_write", "w"))


def _access_table(p, times, transfer_ns: float, submit_cpu_ns: float = 0.0) -> Dict[str, Any]:
    """QD1 4 KiB request times -> access times (the model adds the transfer at the device's
    bandwidth itself, and charges the submitter's CPU where it says below), at the same
    cumulative probabilities."""
    ns = [max(0, int(round(t - transfer_ns - submit_cpu_ns))) for t in times]
    for i in range(1, len(ns)):  # histogram buckets are monotonic; keep it so after rounding
        ns[i] = max(ns[i], ns[i - 1])
    return {"p": list(p), "ns": ns}


def fit(m: Dict[str, Any], disk: Optional[str], rot: Optional[bool]) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """Measurements -> DeviceParams and Costs. The model's per-request time is access time +
    bytes / bandwidth; a QD1 4 KiB time is therefore access + 4096 / bw. The access time is a
    distribution (device/service.rs): one table per kind of request, which the simulator
    samples per request; the constant latencies are the tables' medians (what a request pays
    where no table applies)."""
    d, f = m["device"], m["faults"]
    rbw, wbw = int(d["seq_read_bytes_per_s"]), int(d["seq_write_bytes_per_s"])
    transfer = {"r": 4096 / rbw * 1e9, "w": 4096 / wbw * 1e9}
    q = d["quantiles"]
    # A read's time is partly the submitting thread's own CPU (syscall, block layer, driver
    # submission and completion: 32 us of a 72 us 4 KiB read on the development VM's virtio
    # disk, 2026-11-26). The simulator charges that CPU to the reading task already: a fault's
    # major_fault_cpu_ns below is the faulting thread's whole CPU time, which contains it. So
    # a read table keeps only the time the submitter waited; left in, a synchronous read paid
    # the CPU twice (a random read() run +34% slow). Writes keep their whole time: the model
    # charges no measured submission CPU for them. Older measurements lack the figure (0).
    cpu = d.get("qd1_cpu_ns", {})
    tables = {name: _access_table(q["p"], q[key], transfer[rw], cpu.get(key, 0.0) if rw == "r" else 0.0)
              for name, key, rw in _TABLES}

    def median(name: str) -> int:
        t = tables[name]
        return t["ns"][t["p"].index(0.5)]

    device = {
        "source": f"calibrated on {platform.node()} ({platform.release()}) {datetime.date.today().isoformat()}: "
                  f"O_DIRECT on {d['file']} (/dev/{disk})",
        # The model's `rotational` selects seek costs and disables VMA readahead; a virtual disk
        # that reports rotational=1 has no seek cost to fit, so seeks stay 0 and only the flag
        # (which the kernel acts on) is copied.
        "rotational": bool(rot),
        "synchronous": False,
        "block_layer": True,
        "read_latency_ns": median("read_access"),
        "write_latency_ns": median("write_access"),
        **tables,
        "read_bandwidth": rbw,
        "write_bandwidth": wbw,
        "parallelism": max(1, int(round(d["parallelism"]))),
        "max_request_pages": _max_sectors_pages(disk),
        "seek_min_ns": 0,
        "seek_full_ns": 0,
        "rotational_latency_ns": 0,
        # The block layer's stages (device/blk.rs): the built-in preset's, not measured here.
        "bio_alloc_ns": 300,
        "plug_merge_ns": 300,
        "request_alloc_ns": 400,
        "dispatch_ns": 500,
        "completion_ns": 500,
        "sync_read_cpu_ns": 0,
        "sync_write_cpu_ns": 0,
    }
    hit = max(1, int(round(f["cache_hit_fault_ns"])))
    major = max(hit, int(round(f["major_fault_cpu_ns"])))
    costs = {
        "resident_touch_ns": max(1, int(round(f["resident_touch_ns"]))),
        "minor_fault_ns": max(1, int(round(f["minor_fault_ns"]))),
        "cache_hit_fault_ns": hit,
        # each further page fault-around maps (a cache-hit fault on a fully cached file)
        "fault_around_page_ns": max(0, int(round(f["fault_around_page_ns"]))),
        # the faulting thread's CPU per major fault (the read's wait is the device's)
        "major_fault_cpu_ns": major,
        # the part of it that is the read's submission (the same QD1 read CPU taken out of the
        # read tables above): a swap-in the store serves submits no read and does not pay it.
        # At most what leaves the fault a cache-hit fault's CPU (lookup, insert and map).
        "read_submit_cpu_ns": max(0, min(int(round(cpu.get("rand_read", 0.0))), major - hit)),
        # buffered read()/write() as the worker makes them: a cached page's read(), and what a
        # new page's write() costs beyond it
        "syscall_page_ns": max(1, int(round(f["cached_read_ns"]))),
        "new_page_write_ns": max(0, int(round(f["new_page_write_ns"] - f["cached_read_ns"]))),
    }
    return device, costs


def calibrate(directory: Optional[str] = None, name: str = "host", out: Optional[str] = None,
              device_path: Optional[str] = None, quick: bool = False, log=None) -> Tuple[str, Dict[str, Any]]:
    """Measure, fit, write the preset file; returns (path, preset). A missing directory is
    created for the measurement and removed after it."""
    from .swapdev import check_workdir, temporary_workdir

    directory = directory or device_path or "/var/tmp/swaplab"
    check_workdir(directory)
    with temporary_workdir(directory):
        return _calibrate_in(directory, name, out, quick, log)


def _calibrate_in(directory: str, name: str, out: Optional[str], quick: bool, log) -> Tuple[str, Dict[str, Any]]:
    from .. import tomlio

    if log:
        log(f"measuring {directory} (O_DIRECT) and fault costs...")
    m = measure(directory, file_bytes=(64 << 20) if quick else (256 << 20), seconds=0.5 if quick else 2.0,
                fault_pages=4096 if quick else 16384)
    disk = block_dev_of(directory)
    rot = rotational(disk) if disk else None
    device, costs = fit(m, disk, rot)
    if log:
        log("measuring the compressor through zram...")
    compressor = compressor_cost.calibrate(pages=256 if quick else 1024, log=log)
    if compressor:
        m["compressor"] = compressor["measured"]
    if log:
        log("measuring a TLB-flush IPI between two CPUs...")
    tlb = tlb_cost.calibrate(quick=quick, log=log)
    if tlb:
        costs.update(tlb["fit"])
        m["tlb"] = tlb["measured"]
    # Through a memory cgroup and a swap file: reclaim first, then swap-ins, whose fit needs
    # the reclaim its read-back pass does to be the host's already.
    for key, phase, what in (("reclaim", reclaim_cost, "reclaim"), ("swapin", swapin_cost, "swap-ins")):
        if log:
            log(f"measuring {what} through a memory cgroup and a swap file...")
        got = phase.calibrate(costs, directory, runs=1 if quick else 3, log=log)
        if got:
            costs.update(got["fit"])
            m[key] = got["measured"]
    preset = {
        "provenance": {
            "name": name,
            "host": platform.node(),
            "kernel": platform.release(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "directory": os.path.abspath(directory),
            "block_device": disk or "",
            "block_device_rotational": bool(rot),
            "swaplab_version": _core.version(),
            "method": ("device: O_DIRECT 1 MiB sequential write then read of a file; 4 KiB requests at queue "
                       "depth 1 under SCHED_FIFO: random and sequential reads (interleaved in 8 rounds) alone and beside a thread writing "
                       "128 KiB requests, random writes, kept as quantile tables of access time (time - "
                       "4096/bandwidth, and for reads minus the submitting thread's mean CPU per request, which "
                       "the major fault's CPU cost contains; constant latency = median); 4 KiB random reads at QD 1..32, one thread "
                       "per request (parallelism = peak IOPS x mean QD1 read). costs, as thread CPU time of touches "
                       "made as the host worker makes them (each between two clock reads): a resident touch, "
                       "first writes to anonymous memory (minor fault - resident touch), faults on cached file "
                       "pages (cache hit, per fault counted, less the resident cost of every touch), random "
                       "faults on uncached file pages with MADV_RANDOM (major fault CPU, likewise); "
                       "4 KiB pwrite() of new pages to a fresh file and pread() of them cached "
                       "(new_page_write = write - cached read; syscall_page = cached read). compressor: "
                       "zswap's compressor on a zram device, thread CPU of O_DIRECT 4 KiB writes and reads of "
                       "pages compressing to 0..4096 bytes, less the zero page's (compressor_cost.py). reclaim: "
                       "256 MiB written once in a 64 MiB memory cgroup with a swap file, the worker's thread CPU "
                       "less its touches and faults, per page reclaimed; the simulator's reclaim parameters "
                       "scaled by one factor to give the same CPU per page on the same workload "
                       "(reclaim_cost.py). swap-in: the same 256 MiB written then read back with page-cluster 0 "
                       "and 3, the read pass's thread CPU against the simulator's with the costs above, solved "
                       "for a swap-in fault's own CPU and the CPU per page read through the swap cache "
                       "(swapin_cost.py). TLB-flush IPI: one page written and MADV_DONTNEED'd in a loop while a "
                       "thread of the same process spins on another CPU, against the same loop in a forked "
                       "child, IPIs counted in /proc/interrupts; sender = extra thread CPU per IPI less the "
                       "per-target default, receiver = the spinning thread's lost time per IPI (tlb_cost.py)."),
        },
        "device": device,
        "costs": costs,
        **({"compressor": compressor["fit"]} if compressor else {}),
        "measured": m,
    }
    path = out or os.path.join(PRESET_DIR, f"{name}.toml")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    from ..io import write_atomic

    write_atomic(path, tomlio.dumps(preset))
    return path, preset
