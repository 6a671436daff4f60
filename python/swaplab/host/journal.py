"""Every change the host runner makes to the machine, and how to undo it.

Each change is pushed as a record *before* it is made effective where possible, and the
records are persisted to ``/run/swaplab/journal-<pid>.json`` so that a runner killed with
SIGKILL can be cleaned up later (``swaplab host cleanup``). Undo runs in reverse order with
SIGINT/SIGTERM blocked, and every step is attempted even when an earlier one fails.

Files: every file the runner creates is journalled before it exists — swap files and loop
backing files (``unlink``) and the run directory that holds the workers' file-mapping data
files (``rundir``: its ``swaplab-*.data`` files, then the directory; anything else found in
it is left in place and reported), and a work directory that did not exist (``workdir``, removed
once empty). ``cleanup`` keeps a journal whose undo failed (with only the
failed records) so that it can be retried, and sets a journal it cannot read aside as
``*.corrupt`` with a message saying what to check by hand.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import stat
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
    elif op == "rundir":
        remove_rundir(rec["path"])
    elif op == "workdir":
        remove_workdir(rec["path"])
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


DATA_FILE = re.compile(r"^swaplab-\d+-\d+-\d+-.*\.data$")


def remove_rundir(path: str) -> None:
    """Remove a run directory: the workers' data files (``swaplab-PID-TASK-INSTANCE-NAME.data``)
    and then the directory. Anything else in it is not ours: it stays, and this fails."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return
    foreign = []
    for n in names:
        p = os.path.join(path, n)
        if DATA_FILE.match(n) and stat.S_ISREG(os.lstat(p).st_mode):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        else:
            foreign.append(n)
    if foreign:
        raise OSError(f"{path}: not removed: it holds files swaplab did not create: {', '.join(sorted(foreign)[:5])}")
    os.rmdir(path)


def remove_workdir(path: str) -> None:
    """Remove a work directory the run created, once it is empty (its run directory and swap
    files are undone before it). Anything left in it is not ours: it stays, and this fails."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        if e.errno != errno.ENOTEMPTY:
            raise
        raise OSError(f"{path}: not removed: it holds files swaplab did not create: "
                      f"{', '.join(sorted(os.listdir(path))[:5])}") from None


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


def _read_journal(path: str) -> List[Record]:
    """The records of a journal file; ValueError when it is not a journal this version wrote."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    records = data.get("records") if isinstance(data, dict) else None
    if not isinstance(records, list) or not all(isinstance(r, dict) and isinstance(r.get("op"), str) for r in records):
        raise ValueError("no list of records with an \"op\"")
    return records


def _keep(path: str, records: List[Record]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": None, "records": records, "kept_by": "swaplab host cleanup"}, f)
    os.replace(tmp, path)


def cleanup(directory: str = JOURNAL_DIR) -> List[str]:
    """Replay stale journals (newest change first). Returns a log of what was done; lines for
    what could not be undone start with "FAILED". A journal whose undo failed keeps exactly the
    failed records (run cleanup again once the cause is fixed); an unreadable journal is moved
    aside to ``*.corrupt`` so that it no longer blocks host runs."""
    log = []
    for path in stale_journals(directory):
        try:
            records = _read_journal(path)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            aside = path + ".corrupt"
            os.replace(path, aside)
            log.append(f"FAILED: {path} is not a readable journal ({e}); moved to {aside}. What that run changed "
                       "cannot be undone automatically: check /proc/swaps, memory cgroups named swaplab-*, "
                       "the knobs in docs/safety.md and swaplab-* files in the work directory")
            continue
        failed: List[Record] = []
        for rec in reversed(records):
            try:
                undo(rec)
                log.append(f"undone: {rec}")
            except Exception as e:  # keep going: every other change must still be undone
                failed.insert(0, rec)
                log.append(f"FAILED: {rec}: {e}")
        if failed:
            _keep(path, failed)
            log.append(f"FAILED: {len(failed)} change(s) kept in {path}: fix the cause and run `swaplab host cleanup` again")
        else:
            os.unlink(path)
    return log


LEFTOVER = re.compile(r"^swaplab-\d+-(swap\d+|\d+\.d)$")


def leftover_files(workdir: str) -> List[str]:
    """Swap files and run directories a host run left in ``workdir`` with no journal to say so
    (after a power cut: /run is gone, the disk files are not). Only names the runner creates,
    never one that is swapped on or backs a loop device. Call with the host lock held."""
    try:
        names = os.listdir(workdir)
    except OSError:
        return []
    busy = set(active_swaps())
    try:
        busy |= set(re.findall(r"\((/[^)]*)\)", subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout))
    except OSError:
        pass
    return sorted(os.path.join(workdir, n) for n in names
                  if LEFTOVER.match(n) and os.path.join(workdir, n) not in busy)


def remove_leftover(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        remove_rundir(path)
    else:
        os.unlink(path)
