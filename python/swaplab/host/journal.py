"""Every change the host runner makes to the machine, and how to undo it.

Each change is pushed as a record *before* it is made effective where possible, and the
records are persisted to ``/run/swaplab/journal-<pid>.json`` so that a runner killed with
SIGKILL can be cleaned up later (``swaplab host cleanup``). Undo runs in reverse order with
SIGINT/SIGTERM blocked, and every step is attempted even when an earlier one fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional

JOURNAL_DIR = "/run/swaplab"

Record = Dict[str, Any]


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _run(argv: List[str], timeout: float = 600) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise OSError(f"{' '.join(argv)}: {r.stderr.strip() or r.stdout.strip() or 'exit %d' % r.returncode}")


def active_swaps(proc_swaps: str = "/proc/swaps") -> List[str]:
    with open(proc_swaps) as f:
        lines = f.read().splitlines()[1:]
    return [ln.split()[0].replace("\\040", " ") for ln in lines if ln.strip()]


def undo(rec: Record) -> None:
    """Undo one journalled change. Idempotent: undoing what is already undone is a no-op."""
    op = rec["op"]
    if op == "knob":
        _write(rec["path"], rec["value"])
    elif op == "swapon":
        if rec["path"] in active_swaps():
            _run(["swapoff", rec["path"]])
    elif op == "unlink":
        try:
            os.unlink(rec["path"])
        except FileNotFoundError:
            pass
    elif op == "rmdir":
        _rmdir_cgroup(rec["path"])
    elif op == "losetup":
        dev = rec["dev"]
        if dev in active_swaps():
            raise OSError(f"{dev} is still swapped on; not detaching it")
        r = subprocess.run(["losetup", "-d", dev], capture_output=True, text=True)
        if r.returncode != 0 and "No such device" not in r.stderr and "failed to use device" not in r.stderr:
            raise OSError(f"losetup -d {dev}: {r.stderr.strip()}")
    elif op == "rotational":
        # only ever restored after the device was swapped off (it is undone after "swapon")
        if rec["dev"] in active_swaps():
            raise OSError(f"{rec['dev']} is swapped on: never change queue/rotational under swap")
        try:
            _write(rec["path"], rec["value"])
        except OSError:
            pass  # the loop device is gone or unconfigured: nothing to restore
    elif op == "zram":
        dev = rec["dev"]
        if dev in active_swaps():
            raise OSError(f"{dev} is still swapped on; not resetting it")
        name = os.path.basename(dev)
        _write(f"/sys/block/{name}/reset", "1")
        if rec.get("hot_added"):
            _write("/sys/class/zram-control/hot_remove", name[len("zram"):])
    elif op == "kill":
        # a worker we started: by pid, only if it is still our child process (start time matches)
        pid = rec["pid"]
        if _proc_start(pid) == rec.get("start"):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    else:
        raise ValueError(f"unknown journal op {op!r}")


def _proc_start(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _rmdir_cgroup(path: str) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Journal:
    """A stack of undo records, persisted while it is not empty."""

    def __init__(self, directory: str = JOURNAL_DIR, persist: bool = True):
        self.records: List[Record] = []
        self.persist = persist
        self.path = os.path.join(directory, f"journal-{os.getpid()}.json")
        self._hooks: List[Callable[[], None]] = []
        if persist:
            os.makedirs(directory, exist_ok=True)

    def push(self, rec: Record) -> None:
        self.records.append(rec)
        self._save()

    def pop_done(self, rec: Record) -> None:
        """A change that was undone in the normal course of the run."""
        self.records.remove(rec)
        self._save()

    def _save(self) -> None:
        if not self.persist:
            return
        if not self.records:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"pid": os.getpid(), "records": self.records}, f)
        os.replace(tmp, self.path)

    def restore(self) -> List[str]:
        """Undo everything, newest first, with SIGINT/SIGTERM blocked. Returns the failures;
        failed records stay in the persisted journal for ``swaplab host cleanup``."""
        errors: List[str] = []
        failed: List[Record] = []
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        try:
            while self.records:
                rec = self.records.pop()
                try:
                    undo(rec)
                except Exception as e:  # keep going: every other change must still be undone
                    errors.append(f"undo {rec}: {e}")
                    failed.insert(0, rec)
                self._save_with(failed)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return errors

    def _save_with(self, failed: List[Record]) -> None:
        keep, self.records = self.records, self.records + failed
        try:
            self._save()
        finally:
            self.records = keep


def stale_journals(directory: str = JOURNAL_DIR) -> List[str]:
    """Journals left by host runs whose process is gone (killed before restoring)."""
    out = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return out
    for n in names:
        if n.startswith("journal-") and n.endswith(".json"):
            try:
                pid = int(n[len("journal-"):-len(".json")])
            except ValueError:
                continue
            if pid != os.getpid() and not os.path.exists(f"/proc/{pid}"):
                out.append(os.path.join(directory, n))
    return sorted(out)


def cleanup(directory: str = JOURNAL_DIR) -> List[str]:
    """Replay stale journals (newest change first). Returns a log of what was done."""
    log = []
    for path in stale_journals(directory):
        with open(path) as f:
            data = json.load(f)
        for rec in reversed(data.get("records", [])):
            try:
                undo(rec)
                log.append(f"undone: {rec}")
            except Exception as e:
                log.append(f"FAILED: {rec}: {e}")
        os.unlink(path)
    return log
