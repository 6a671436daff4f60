"""``swaplab calibrate``'s compressor phase: what this kernel's compressor costs per 4 KiB page,
by what the page contains, and the fit of the simulator's three figures
(crates/core/src/swap/store/zswap/compressor.rs: ``compress_ns``, ``decompress_ns``,
``full_cost_bytes``).

How. zram compresses in the writer's context and decompresses in the reader's
(``zram_write_page`` / ``zram_read_page``: a bio-based, synchronous driver), so the thread CPU
time of an O_DIRECT 4 KiB ``pwrite``/``pread`` on a zram device is the syscall, the bio and
zram's work on that one page. The pages are written as the host workers write them
(crates/host/src/content.rs): N random bytes then zeroes, which compresses to about N bytes;
an all-zero page is zram's same-filled slot and is never compressed. So, per size N,

* compress(N) = CPU(write N) - CPU(write zero page): the compression and the pool store (the
  zero page's write holds the same syscall and bio, and a scan of the page, which a page
  starting with random bytes stops at its first word; the pool store is a few hundred ns that
  the simulator also charges as its store overhead, so the figure is that much high);
* decompress(N) = CPU(read N) - CPU(read zero page) (the zero page's read is a fill).

The compressor is zswap's (``/sys/module/zswap/parameters/compressor``), which zram offers under
the same crypto name. Each call is timed alone (CLOCK_THREAD_CPUTIME_ID around the syscall, as
the device phase does); the sizes are interleaved page by page so that a change in the
machine's load falls on all of them alike; medians per size.

Fit (the simulator's form: a full pass for a page that does not compress, proportional to the
compressed size below ``full_cost_bytes``): ``compress_ns`` = compress(4096), the page that does
not compress; the slope per compressed byte is the least-squares line through the origin over
the compressible sizes, and ``full_cost_bytes`` = compress_ns / slope (within 1..4096);
``decompress_ns`` = the decompression slope x ``full_cost_bytes`` (a page kept whole is
copied back, not decompressed: its figure is measured and kept, not fitted).
"""

from __future__ import annotations

import mmap
import os
import statistics
import time
from typing import Any, Dict, List, Optional

from .journal import Journal
from .sysfs import read

PAGE = 4096
#: Compressed sizes measured (0: the zero page, 4096: a page that does not compress).
SIZES = (0, 512, 1024, 1536, 2048, 3072, PAGE)


def host_compressor() -> str:
    try:
        return read("/sys/module/zswap/parameters/compressor")
    except OSError:
        return "lzo"


def measure(compressor: str, pages: int = 1024) -> Dict[str, Any]:
    """Time 4 KiB O_DIRECT writes and reads of each size in SIZES on a zram device set up for
    the measurement (and reset and removed after it)."""
    from .swapdev import _free_zram, _set_comp_algorithm

    journal = Journal()
    try:
        dev, _ = _free_zram(journal)
        name = os.path.basename(dev)
        _set_comp_algorithm(name, compressor)
        with open(f"/sys/block/{name}/disksize", "w") as f:
            f.write(str(len(SIZES) * pages * PAGE))
        return {"compressor": compressor, "pages_per_size": pages, **_time_pages(dev, pages)}
    finally:
        journal.restore()


def _time_pages(dev: str, pages: int) -> Dict[str, Any]:
    buf = mmap.mmap(-1, PAGE)  # page-aligned, as O_DIRECT needs
    fd = os.open(dev, os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC)
    writes: Dict[int, List[int]] = {n: [] for n in SIZES}
    reads: Dict[int, List[int]] = {n: [] for n in SIZES}
    try:
        for rw, samples in (("write", writes), ("read", reads)):
            for i in range(pages):
                for k, n in enumerate(SIZES):
                    off = (k * pages + i) * PAGE
                    if rw == "write":
                        buf[:] = os.urandom(n) + bytes(PAGE - n)
                        t = time.thread_time_ns()
                        os.pwrite(fd, buf, off)
                    else:
                        t = time.thread_time_ns()
                        os.preadv(fd, [buf], off)
                    samples[n].append(time.thread_time_ns() - t)
    finally:
        os.close(fd)
        buf.close()
    return {"sizes": list(SIZES),
            "write_cpu_ns": [statistics.median(writes[n]) for n in SIZES],
            "read_cpu_ns": [statistics.median(reads[n]) for n in SIZES]}


def _slope_through_origin(xs: List[float], ys: List[float]) -> float:
    return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)


def fit(m: Dict[str, Any]) -> Dict[str, Any]:
    """Measurements -> the simulator's figures for m["compressor"] (see the module doc)."""
    sizes, w, r = m["sizes"], m["write_cpu_ns"], m["read_cpu_ns"]
    compress = [max(0.0, x - w[0]) for x in w]
    decompress = [max(0.0, x - r[0]) for x in r]
    between = [i for i, n in enumerate(sizes) if 0 < n < PAGE]
    full = compress[sizes.index(PAGE)]
    slope = _slope_through_origin([sizes[i] for i in between], [compress[i] for i in between])
    full_cost_bytes = PAGE if slope <= 0 else min(PAGE, max(1, round(full / slope)))
    d_slope = _slope_through_origin([sizes[i] for i in between], [decompress[i] for i in between])
    return {"compressor": m["compressor"],
            "compress_ns": max(1, round(full)),
            "decompress_ns": max(1, round(d_slope * full_cost_bytes)),
            "full_cost_bytes": int(full_cost_bytes)}


def calibrate(pages: int, log=None) -> Optional[Dict[str, Any]]:
    """The phase as `swaplab calibrate` runs it: None (and a note) when this host has no zram."""
    compressor = host_compressor()
    try:
        m = measure(compressor, pages)
    except Exception as e:  # no zram module, compressor not offered: the preset goes without
        if log:
            log(f"compressor phase skipped: {e}")
        return None
    return {"measured": m, "fit": fit(m)}
