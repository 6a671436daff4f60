"""Swap devices for a host run: a swap file on disk, a non-rotational loop device over a disk
file, or zram — never anything on tmpfs (docs/host-runner.md, "Traps")."""

from __future__ import annotations

import contextlib
import glob
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

from .errors import PreconditionError
from .journal import Journal, active_swaps, remove_workdir
from .sysfs import block_dev_of, read, rotational

BACKENDS = ("auto", "file", "loop", "zram")
TMPFS_MAGIC = 0x01021994
RAMFS_MAGIC = 0x858458F6


def _run(argv: List[str]) -> str:
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise OSError(f"{' '.join(argv)} failed: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout.strip()


# statfs f_type of file systems that hold no disk files (linux/magic.h)
PSEUDO_FS = {0x9FA0: "proc", 0x62656572: "sysfs", 0x27E0EB: "cgroup", 0x63677270: "cgroup2", 0x1CD1: "devpts",
             0x64626720: "debugfs", 0x74726163: "tracefs", 0x73636673: "securityfs", 0xCAFE4A11: "bpf",
             0x6E736673: "nsfs", 0x42494E4D: "binfmt_misc", 0x19800202: "mqueue", 0x50495045: "pipefs"}


def check_disk_dir(directory: str) -> None:
    """Refuse tmpfs/ramfs: swap on a device backed by tmpfs pages makes swapoff hang forever.
    The directory must exist (see :func:`check_workdir`)."""
    from .. import _core

    magic = _core.host_fs_magic(directory) & 0xFFFFFFFF
    if magic in (TMPFS_MAGIC, RAMFS_MAGIC):
        raise PreconditionError(
            f"{directory} is on tmpfs/ramfs: a swap device there would swap tmpfs pages onto itself and "
            "swapoff would hang; use --workdir on a disk file system")
    if magic in PSEUDO_FS:
        raise PreconditionError(f"--workdir {directory} is on {PSEUDO_FS[magic]}, which holds no files: "
                                "use a directory on a disk file system")


def check_workdir(directory: str) -> Optional[str]:
    """Refuse a work directory that is empty, not a directory, on tmpfs or a pseudo file system,
    or where no file can be created. A missing one is checked through its nearest existing
    ancestor and not created here: the run creates it and removes it again
    (:func:`make_workdir`); the return value then says so."""
    import tempfile

    if not directory or not directory.strip():
        raise PreconditionError("--workdir: an empty path: name a directory on a disk file system")
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise PreconditionError(f"--workdir {directory}: not a directory")
    if not os.path.exists(directory):
        parent = _nearest_existing(directory)
        if not os.path.isdir(parent):
            raise PreconditionError(f"--workdir {directory}: cannot create it: {parent} is not a directory")
        check_disk_dir(parent)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise PreconditionError(f"--workdir {directory}: cannot create it: {parent} is not writable")
        return f"the work directory {directory} does not exist: it is created for the run and removed after it"
    check_disk_dir(directory)
    try:
        fd, probe = tempfile.mkstemp(prefix=".swaplab-probe-", dir=directory)
    except OSError as e:
        raise PreconditionError(f"--workdir {directory}: cannot create a file there: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)
    return None


def _nearest_existing(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.lexists(path):
        path = os.path.dirname(path)
    return path


def _missing_levels(directory: str) -> List[str]:
    """The directories that creating ``directory`` makes, outermost first."""
    levels: List[str] = []
    path = os.path.abspath(directory)
    while not os.path.lexists(path):
        levels.insert(0, path)
        path = os.path.dirname(path)
    return levels


def make_workdir(journal: Journal, directory: str) -> None:
    """Create a missing work directory (and missing parents), each level journalled before it
    exists as ``workdir``: undone by removing it if it is empty, so the machine keeps no
    directory it did not have."""
    for level in _missing_levels(directory):
        journal.push({"op": "workdir", "path": level})
        os.mkdir(level, 0o755)


@contextlib.contextmanager
def temporary_workdir(directory: str) -> Iterator[None]:
    """For the calibration: the missing levels of ``directory`` exist inside the block and are
    removed (when empty) after it, on every exit path."""
    levels = _missing_levels(directory)
    for level in levels:
        os.mkdir(level, 0o755)
    try:
        yield
    finally:
        for level in reversed(levels):
            try:
                remove_workdir(level)
            except OSError:
                pass  # something not ours appeared in it during the calibration: it stays


def backend_for(preset: str, requested: str) -> str:
    """The host device for a preset. "loop" asks for a non-rotational device: a zram preset
    stays zram (already non-rotational, and synchronous like the model says)."""
    if requested == "loop" and preset == "zram":
        return "zram"
    if requested != "auto":
        return requested
    if preset == "zram":
        return "zram"
    if preset == "ramdisk":
        if not glob.glob("/sys/block/ram[0-9]*"):
            raise PreconditionError(
                "swap device 'ramdisk' (brd) is unavailable on this host (no /sys/block/ram*); "
                "use --swap-backend zram (synchronous, like brd) or loop")
        return "ramdisk"
    return "file"


@dataclass
class SwapDevice:
    name: str                 # the simulator's device name, e.g. swap0:sata-ssd
    preset: str
    backend: str
    swap_path: str            # as listed in /proc/swaps
    disk: Optional[str]       # block device whose /sys/block/X/stat we read
    rotational: Optional[bool]
    synchronous: bool
    size_bytes: int
    description: str
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        return {"name": self.name, "preset": self.preset, "backend": self.backend, "path": self.swap_path,
                "block_device": self.disk, "rotational": self.rotational, "synchronous": self.synchronous,
                "size_bytes": self.size_bytes, "description": self.description, **self.extra}


def _make_file(journal: Journal, path: str, size: int) -> None:
    journal.push({"op": "unlink", "path": path})
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError:
            chunk = b"\0" * (1 << 20)
            left = size
            while left > 0:
                left -= os.write(fd, chunk[: min(left, len(chunk))])
        os.fsync(fd)
    finally:
        os.close(fd)


def _swapon(journal: Journal, path: str, priority: Optional[int]) -> None:
    _run(["mkswap", path])
    journal.push({"op": "swapon", "path": path})
    argv = ["swapon"]
    if priority is not None and priority >= 0:
        argv += ["-p", str(priority)]
    _run(argv + [path])
    if path not in active_swaps():
        raise OSError(f"swapon {path} reported success but {path} is not in /proc/swaps")


def setup(journal: Journal, resolved: Dict[str, Any], backend: str, workdir: str) -> List[SwapDevice]:
    """Create and switch on every [[swap]] device of the workload."""
    devices = []
    for i, (spec, rs) in enumerate(zip(resolved["swap"], resolved["swap_devices"])):
        preset = spec["device"]
        size = int(rs["size"]) // 4096 * 4096
        prio = spec.get("priority")
        kind = backend_for(preset, backend)
        tag = f"swaplab-{os.getpid()}-swap{i}"
        if kind in ("file", "loop"):
            path = os.path.join(workdir, tag)
            _make_file(journal, path, size)
            disk = block_dev_of(path)
            rot = rotational(disk) if disk else None
            if kind == "file":
                _swapon(journal, path, prio)
                devices.append(SwapDevice(rs["name"], preset, "file", path, disk, rot, False, size,
                                          f"swap file {path} on /dev/{disk} (rotational={int(bool(rot))})"))
            else:
                # the free device's flag as it was before we configured it, restored after
                # swapoff and detach (configuring a loop device copies the backing disk's flag)
                dev = _run(["losetup", "--find"])
                name = os.path.basename(dev)
                rpath = f"/sys/block/{name}/queue/rotational"
                journal.push({"op": "rotational", "dev": dev, "path": rpath, "value": read(rpath)})
                journal.push({"op": "losetup", "dev": dev})
                _run(["losetup", "--direct-io=on", dev, path])
                _require_direct_io(dev)
                # non-rotational for the device's whole swapped-on life: set BEFORE swapon
                with open(rpath, "w") as f:
                    f.write("0")
                if read(rpath) != "0":
                    raise PreconditionError(f"could not mark {dev} non-rotational")
                _swapon(journal, dev, prio)
                devices.append(SwapDevice(rs["name"], preset, "loop", dev, name, False, False, size,
                                          f"loop device {dev} (direct I/O, marked non-rotational) over {path} on /dev/{disk}",
                                          {"backing_file": path, "backing_disk": disk, "direct_io": True}))
        elif kind == "zram":
            dev, hot = _free_zram(journal)
            name = os.path.basename(dev)
            # The workload's compressor (swap/zram.rs), set before disksize as zram requires;
            # the device is reset after the run, which gives it the kernel's default back.
            want = (resolved.get("zram") or {}).get("compressor", "lzo")
            _set_comp_algorithm(name, want)
            with open(f"/sys/block/{name}/disksize", "w") as f:
                f.write(str(size))
            comp = read(f"/sys/block/{name}/comp_algorithm")
            algo = comp[comp.find("[") + 1: comp.find("]")] if "[" in comp else comp
            _swapon(journal, dev, prio)
            devices.append(SwapDevice(rs["name"], preset, "zram", dev, name, False, True, size,
                                      f"zram {dev} ({algo}, synchronous: swap-in bypasses the swap cache and readahead)",
                                      {"comp_algorithm": algo}))
        elif kind == "ramdisk":
            raise PreconditionError("brd ramdisk swap is not implemented by the host runner; use --swap-backend zram or loop")
        else:
            raise PreconditionError(f"unknown swap backend {kind!r} (expected one of {', '.join(BACKENDS)})")
    return devices


def _require_direct_io(dev: str) -> None:
    """Refuse a loop device that does not run with direct I/O.

    With it, the loop driver reads and writes its backing file with O_DIRECT (``lo_rw_aio``),
    so the swap device is the backing disk as ``swaplab calibrate`` measures it (O_DIRECT on
    the work directory's disk). Without it, swap writes would go through the backing file's
    page cache and the flusher — a device no preset describes. ``losetup --direct-io=on``
    does not fail when the kernel declines: ``loop_update_dio`` (6.18) clears the flag
    silently when the backing file cannot do O_DIRECT, the loop's block size is smaller than
    the backing disk's or the offset is unaligned — so read back what the kernel chose."""
    flag = f"/sys/block/{os.path.basename(dev)}/loop/dio"
    try:
        dio = read(flag)
    except OSError as e:
        raise PreconditionError(f"cannot read {flag}: {e.strerror or e}") from None
    if dio != "1":
        raise PreconditionError(f"{dev} runs with buffered I/O ({flag} = {dio}): its backing file's file system "
                                "refused direct I/O; use a --workdir on a file system that supports O_DIRECT")


def _set_comp_algorithm(name: str, algo: str) -> None:
    path = f"/sys/block/{name}/comp_algorithm"
    offered = read(path).replace("[", " ").replace("]", " ").split()
    if algo not in offered:
        raise PreconditionError(f"zram compressor {algo!r} is not available on this host (it offers: {', '.join(offered)})")
    with open(path, "w") as f:
        f.write(algo)


def _free_zram(journal: Journal):
    swaps = active_swaps()
    for d in sorted(glob.glob("/sys/block/zram*")):
        name = os.path.basename(d)
        dev = f"/dev/{name}"
        try:
            if read(f"{d}/disksize") == "0" and dev not in swaps and read(f"{d}/initstate") == "0":
                if not _holders(d):
                    journal.push({"op": "zram", "dev": dev, "hot_added": False})
                    return dev, False
        except OSError:
            continue
    if not os.path.exists("/sys/class/zram-control/hot_add"):
        raise PreconditionError("zram is unavailable on this host (no free /dev/zram* and no zram-control)")
    n = read("/sys/class/zram-control/hot_add")
    dev = f"/dev/zram{n}"
    journal.push({"op": "zram", "dev": dev, "hot_added": True})
    return dev, True


def _holders(sysdir: str) -> bool:
    try:
        return bool(os.listdir(os.path.join(sysdir, "holders")))
    except OSError:
        return False


def readahead_in_effect(devices: List[SwapDevice], vma_ra_enabled: bool, page_cluster: int) -> str:
    """What swap-in readahead the kernel actually uses now (kernel-algorithms.md §1.5-§1.7):
    VMA-based only if vma_ra_enabled and no rotational swap device is on *anywhere*;
    synchronous devices (zram) bypass the swap cache and readahead for single-mapped pages."""
    any_rot = False
    for path in active_swaps():
        disk = None
        if path.startswith("/dev/"):
            disk = os.path.basename(os.path.realpath(path))
            if os.path.exists(f"/sys/class/block/{disk}/partition"):
                disk = os.path.basename(os.path.dirname(os.path.realpath(f"/sys/class/block/{disk}")))
        else:
            try:
                disk = block_dev_of(path)
            except OSError:
                disk = None
        if disk is None or rotational(disk) is not False:
            any_rot = True
    if devices and all(d.synchronous for d in devices):
        return "none (synchronous device)"
    mode = "vma" if (vma_ra_enabled and not any_rot) else "cluster"
    if page_cluster == 0:
        mode += " (page-cluster 0: window of 1 page)"
    return mode
