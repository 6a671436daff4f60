"""``swaplab calibrate``: measure this machine and write a device preset with provenance.

The preset file (``~/.config/swaplab/devices/NAME.toml`` or ``--out``) has three tables:

* ``[provenance]``: host, kernel, date, method, the measured file system / block device;
* ``[device]``: every field of the simulator's ``DeviceParams`` (crates/core/src/device);
* ``[costs]``: the CPU cost parameters measured here (fields of ``[costs]`` in a workload);
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
from .sysfs import block_dev_of, rotational

PRESET_DIR = os.path.expanduser(os.environ.get("SWAPLAB_DEVICES", "~/.config/swaplab/devices"))


def measure(directory: str, file_bytes: int = 256 << 20, seconds: float = 2.0, fault_pages: int = 16384) -> Dict[str, Any]:
    from .swapdev import check_workdir

    check_workdir(directory)
    dev = json.loads(_core.host_calibrate_device(directory, file_bytes, seconds))
    faults = json.loads(_core.host_calibrate_faults(directory, fault_pages))
    return {"device": dev, "faults": faults}


def _max_sectors_pages(disk: Optional[str]) -> int:
    try:
        with open(f"/sys/block/{disk}/queue/max_sectors_kb") as f:
            return max(1, int(f.read()) // 4)
    except (OSError, ValueError, TypeError):
        return 128


def fit(m: Dict[str, Any], disk: Optional[str], rot: Optional[bool]) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """Measurements -> DeviceParams and Costs. The model's per-request time is
    latency + bytes / bandwidth; the QD1 4 KiB latency therefore is latency + 4096 / bw."""
    d, f = m["device"], m["faults"]
    rbw, wbw = int(d["seq_read_bytes_per_s"]), int(d["seq_write_bytes_per_s"])
    rlat = max(0, int(d["rand_read_ns"]["mean"] - 4096 / rbw * 1e9))
    wlat = max(0, int(d["rand_write_ns"]["mean"] - 4096 / wbw * 1e9))
    device = {
        "source": f"calibrated on {platform.node()} ({platform.release()}) {datetime.date.today().isoformat()}: "
                  f"O_DIRECT on {d['file']} (/dev/{disk})",
        # The model's `rotational` selects seek costs and disables VMA readahead; a virtual disk
        # that reports rotational=1 has no seek cost to fit, so seeks stay 0 and only the flag
        # (which the kernel acts on) is copied.
        "rotational": bool(rot),
        "synchronous": False,
        "block_layer": True,
        "read_latency_ns": rlat,
        "write_latency_ns": wlat,
        "read_bandwidth": rbw,
        "write_bandwidth": wbw,
        "parallelism": max(1, int(round(d["parallelism"]))),
        "max_request_pages": _max_sectors_pages(disk),
        "seek_min_ns": 0,
        "seek_full_ns": 0,
        "rotational_latency_ns": 0,
        "block_layer_cpu_ns": 2000,
        "sync_read_cpu_ns": 0,
        "sync_write_cpu_ns": 0,
    }
    costs = {
        "resident_touch_ns": max(1, int(round(f["resident_touch_ns"]))),
        "minor_fault_ns": max(1, int(round(f["minor_fault_ns"]))),
        "cache_hit_fault_ns": max(1, int(round(f["cache_hit_fault_ns"]))),
        # a major fault = device read + CPU; the CPU part is what remains above the QD1 read
        "major_fault_cpu_ns": max(int(round(f["cache_hit_fault_ns"])), int(round(f["major_fault_ns"] - d["rand_read_ns"]["mean"]))),
    }
    return device, costs


def calibrate(directory: Optional[str] = None, name: str = "host", out: Optional[str] = None,
              device_path: Optional[str] = None, quick: bool = False, log=None) -> Tuple[str, Dict[str, Any]]:
    """Measure, fit, write the preset file; returns (path, preset)."""
    from .. import tomlio

    directory = directory or device_path or "/var/tmp/swaplab"
    if log:
        log(f"measuring {directory} (O_DIRECT) and fault costs...")
    m = measure(directory, file_bytes=(64 << 20) if quick else (256 << 20), seconds=0.5 if quick else 2.0,
                fault_pages=4096 if quick else 16384)
    disk = block_dev_of(directory)
    rot = rotational(disk) if disk else None
    device, costs = fit(m, disk, rot)
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
            "method": ("device: O_DIRECT 1 MiB sequential write then read of a file; 4 KiB random reads and writes "
                       "at queue depth 1 (latency = mean - 4096/bandwidth); 4 KiB random reads at QD 1..32, one "
                       "thread per request (parallelism = peak IOPS x QD1 latency). costs: first writes to "
                       "anonymous memory (minor fault - resident touch), faults on cached file pages one per 16 "
                       "pages (cache hit), random faults on uncached file pages with MADV_RANDOM (major fault; "
                       "CPU part = major - QD1 read)."),
        },
        "device": device,
        "costs": costs,
        "measured": m,
    }
    path = out or os.path.join(PRESET_DIR, f"{name}.toml")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    from ..io import write_atomic

    write_atomic(path, tomlio.dumps(preset))
    return path, preset
