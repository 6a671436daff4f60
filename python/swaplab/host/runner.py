"""Run a workload file on the real kernel: one memory cgroup, the workload's swap devices and
knobs, one native worker process per task instance; the result in the simulator's schema.

The machine is left as it was on every exit path: every change is journalled (journal.py)
and undone in a ``finally`` that no signal can interrupt (signals.py); SIGTERM/SIGHUP unwind
like Ctrl-C. One host run at a time: the host lock (lock.py) is taken before anything is
checked or changed and held until the machine is restored.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import _core
from . import cgroup as cg
from . import swapdev, zswap
from .errors import HostError, OOMKilled, PreconditionError
from .journal import JOURNAL_DIR, Journal, active_swaps, stale_journals
from .lock import HostLock
from .signals import RunSignals
from .sysfs import (KNOBS, MGLRU, PAGE, READ_AHEAD_KB, block_dev_of, disk_stat, host_info, read, set_dirty_limit,
                    set_knob, vmstat)

# Readahead policies the host kernel (6.x) can be asked for (kernel-algorithms.md §1.6):
# "auto" = whatever the knobs and devices give; "vma" needs vma_ra_enabled and no rotational
# swap device; "adaptive" is 6.x cluster readahead (swapin_nr_pages), i.e. vma_ra_enabled=0.
HOST_READAHEAD = ("auto", "vma", "adaptive")
HOST_BAILOUT = ("auto", "proportional")


@dataclass
class HostOptions:
    runs: int = 1
    retries: int = 0
    allow_foreign_swap: bool = False
    swap_backend: str = "auto"          # auto | file | loop | zram
    workdir: str = "/var/tmp/swaplab"   # swap files, loop backing files, file-backed mappings
    zswap: bool = False
    fault_threshold_ns: int = 1000
    journal_dir: str = JOURNAL_DIR
    timeout_s: Optional[float] = None   # wall-clock cap per run (None: 10x sim time limit or 1 h)
    euid: Optional[int] = None          # injectable for tests; default os.geteuid()
    log: Optional[Callable[[str], None]] = None


@dataclass
class _Worker:
    task: str
    task_idx: int
    instance: int
    proc: subprocess.Popen
    stderr: Any
    result: Optional[Dict[str, Any]] = None
    error: Optional[str] = None
    killed_by_us: bool = False
    lines: List[str] = field(default_factory=list)
    reader: Optional[threading.Thread] = None
    released: bool = False

    @property
    def label(self) -> str:
        return f"{self.task}#{self.instance}"


# The sampling loop's period: it wakes this often, samples when a tick has passed (so each
# memory.stat read lands up to this late after its tick) and checks the workers.
SAMPLER_POLL_NS = 10_000_000


def _say(opts: HostOptions, msg: str) -> None:
    if opts.log:
        opts.log(msg)


# --------------------------------------------------------------------------- preconditions


def _check_reclaim_policy(policy: str, have_lru_gen: bool) -> None:
    """Only the classic LRU runs here: MGLRU needs a kernel with CONFIG_LRU_GEN (which shows
    /sys/kernel/mm/lru_gen/enabled), and even then the runner switches it off."""
    if policy == "mglru":
        if not have_lru_gen:
            raise PreconditionError("kernel.reclaim = 'mglru' cannot run on this host: its kernel is built without "
                                    f"CONFIG_LRU_GEN (no {MGLRU}); only the simulator has MGLRU here")
        raise PreconditionError("kernel.reclaim = 'mglru' is not supported by the host runner yet: it runs the classic LRU "
                                f"and switches {MGLRU} off")
    if policy != "classic":
        raise PreconditionError(f"kernel.reclaim = {policy!r} is unavailable on this host (only the classic LRU can be run here)")


def _check_no_fork(tasks: List[Dict[str, Any]]) -> None:
    """The runner's workers are independent processes, each allocating its own memory: a task
    forked from another (`fork_of`, sharing the parent's anonymous memory copy-on-write) would
    run with private copies instead, a different workload."""
    forked = [t["name"] for t in tasks if t.get("fork_of")]
    if forked:
        raise PreconditionError(f"fork_of ({', '.join(forked)}) is simulated only: the host runner's workers are "
                                "independent processes and cannot share a parent's anonymous memory copy-on-write")


def _check_no_shared_files(tasks: List[Dict[str, Any]]) -> None:
    """A mapping naming its file (`file`) shares one file's page cache with every other mapping
    of that name; the runner gives each mapping a data file of its own, so it would run a
    different workload (no page mapped by several processes)."""
    named = sorted({m["file"] for t in tasks for m in t.get("mapping", []) if m.get("file")})
    if named:
        raise PreconditionError(f"file = {', '.join(repr(n) for n in named)} is simulated only: the host runner gives "
                                "each mapping its own data file and cannot map one file into several processes")


def preflight(resolved: Dict[str, Any], opts: HostOptions) -> List[str]:
    """Refuse (PreconditionError) before changing anything; return notes for the report."""
    notes: List[str] = []
    k = resolved["kernel"]
    _check_reclaim_policy(k["reclaim"], os.path.exists(MGLRU))
    _check_no_fork(resolved.get("task", []))
    _check_no_shared_files(resolved.get("task", []))
    euid = os.geteuid() if opts.euid is None else opts.euid
    if euid != 0:
        raise PreconditionError("the host runner must run as root: it creates a memory cgroup, swap devices and sets kernel knobs")
    if k["readahead"] not in HOST_READAHEAD:
        raise PreconditionError(
            f"kernel.readahead = {k['readahead']!r} is unavailable on this host: the running kernel only has "
            "VMA readahead (\"vma\") and adaptive cluster readahead (\"adaptive\"); use \"auto\" to take what the knobs give")
    if k["bailout"] not in HOST_BAILOUT:
        raise PreconditionError(f"kernel.bailout = {k['bailout']!r} is unavailable on this host: its kernel has its own (proportional) rule")
    if k["profile"] not in ("6.x", "6", "modern"):
        notes.append(f"kernel.profile {k['profile']!r} is simulated only: the host runs its own kernel ({os.uname().release})")
    if cg.detect() is None:
        raise PreconditionError("no memory cgroup controller (neither v1 at /sys/fs/cgroup/memory nor v2 with memory)")
    stale = stale_journals(opts.journal_dir)
    if stale:
        raise PreconditionError(
            f"a previous host run died without restoring the machine ({', '.join(stale)}): run `swaplab host cleanup` first")
    foreign = active_swaps()
    if foreign and not opts.allow_foreign_swap:
        raise PreconditionError(
            f"swap is already in use on this machine ({', '.join(foreign)}): its traffic would pollute the counters; "
            "switch it off or pass --allow-foreign-swap")
    if foreign:
        notes.append(f"foreign swap active during the run: {', '.join(foreign)} (counters include its traffic)")
    elif opts.allow_foreign_swap:
        notes.append("--allow-foreign-swap: swap other than this run's may have been switched on during the run; "
                     "the counters may include its traffic")
    for tool in ("mkswap", "swapon", "swapoff") + (("losetup",) if opts.swap_backend == "loop" else ()):
        if resolved["swap"] and shutil.which(tool) is None:
            raise PreconditionError(f"{tool} not found: swap cannot be enabled on this host")
    if opts.swap_backend not in swapdev.BACKENDS:
        raise PreconditionError(f"unknown swap backend {opts.swap_backend!r} (expected one of {', '.join(swapdev.BACKENDS)})")
    for spec in resolved["swap"]:
        swapdev.backend_for(spec["device"], opts.swap_backend)
        if spec.get("priority") is not None and spec["priority"] < 0:
            notes.append(f"swap priority {spec['priority']} cannot be requested with swapon -p; the kernel assigns its default")
    for knob in ("page_cluster", "swappiness", "vma_ra_enabled") + _DIRTY_KNOBS:
        if not os.path.exists(KNOBS[knob]):
            raise PreconditionError(f"{KNOBS[knob]} does not exist: {knob} cannot be set on this host")
    limit = memory_limit(resolved)
    avail = _meminfo().get("MemAvailable", 0) * 1024
    if avail and limit > avail:
        raise PreconditionError(f"the workload's memory ({limit >> 20} MiB) exceeds this host's available memory ({avail >> 20} MiB)")
    if any(m["kind"] == "file" for t in resolved["task"] for m in t["mapping"]) or resolved["swap"]:
        created = swapdev.check_workdir(opts.workdir)
        if created:
            _say(opts, created)
            notes.append(created)
    return notes


def memory_limit(resolved: Dict[str, Any]) -> int:
    m = resolved["machine"]
    if m.get("memcg_limit"):
        return int(m["memcg_limit"]) // PAGE * PAGE
    return (int(m["ram"]) - int(m["kernel_reserved"])) // PAGE * PAGE


def _meminfo() -> Dict[str, int]:
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k] = int(v.split()[0])
    return out


# --------------------------------------------------------------------------- one run


def _spawn(text: str, source: str, overrides: List[str], ti: int, inst: int, name: str, datadir: str,
           opts: HostOptions) -> _Worker:
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([sys.executable, "-m", "swaplab.host.worker", str(os.getpid())],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                         start_new_session=True, close_fds=True)
    w = _Worker(name, ti, inst, p, err)
    spec = {"text": text, "source": source, "overrides": overrides, "task": ti, "instance": inst,
            "workdir": datadir, "fault_threshold_ns": opts.fault_threshold_ns}
    p.stdin.write(json.dumps(spec) + "\n")
    p.stdin.flush()
    return w


def _read_lines(w: _Worker) -> None:
    for line in w.proc.stdout:
        w.lines.append(line)


def _stderr(w: _Worker) -> str:
    try:
        w.stderr.seek(0)
        return w.stderr.read().strip()[-2000:]
    except Exception:
        return ""


def run_once(text: str, source: str, overrides: List[str], opts: HostOptions, run_index: int = 0,
             sig: Optional[RunSignals] = None) -> Dict[str, Any]:
    """One host run. Raises OOMKilled (machine restored) when the OOM killer hit a worker."""
    if sig is None:
        with RunSignals() as own, HostLock(opts.journal_dir):
            return run_once(text, source, overrides, opts, run_index, own)
    resolved = json.loads(_core.resolve(text, source, overrides))
    with HostLock(opts.journal_dir):
        notes = preflight(resolved, opts)
        journal = Journal(opts.journal_dir)
        workers: List[_Worker] = []
        try:
            return _run(text, source, overrides, resolved, notes, opts, journal, workers, run_index)
        finally:
            with sig.deferred():
                _stop_workers(workers)
                errors = journal.restore()
                if errors:
                    raise HostError("could not restore the machine completely:\n  " + "\n  ".join(errors) +
                                    f"\n(the remaining changes are kept in {journal.path}; see `swaplab host cleanup`)")


def _stop_workers(workers: List[_Worker]) -> None:
    """Released workers unmap and exit by themselves; any still running is killed (our own
    children, by pid)."""
    deadline = time.monotonic() + 5
    for w in workers:
        if w.proc.poll() is None and w.result is not None:
            try:
                w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    for w in workers:
        if w.proc.poll() is None:
            w.killed_by_us = True
            w.proc.kill()
    for w in workers:
        try:
            w.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        for f in (w.proc.stdin, w.proc.stdout, w.stderr):
            try:
                f.close()
            except Exception:
                pass


_DIRTY_KNOBS = ("dirty_ratio", "dirty_bytes", "dirty_background_ratio", "dirty_background_bytes",
                "dirty_expire_centisecs", "dirty_writeback_centisecs")

#: debugfs `fault_around_bytes` of every kernel since 3.15 unless changed by hand.
_HOST_FAULT_AROUND_BYTES = 65536


def _set_page_cache_knobs(journal: Journal, resolved: Dict[str, Any], opts: HostOptions, notes: List[str]) -> None:
    """vm.dirty_* as the workload's `[kernel]` gives them, and, when it maps files, the
    `read_ahead_kb` of the disk holding their data files (the simulator's file device): set
    before the workers open their files, since open() copies the disk's readahead size into
    the file's readahead state. Every change is journalled and restored."""
    k = resolved["kernel"]
    set_dirty_limit(journal, "dirty_ratio", "dirty_bytes", k["dirty_ratio"], k["dirty_bytes"])
    set_dirty_limit(journal, "dirty_background_ratio", "dirty_background_bytes",
                    k["dirty_background_ratio"], k["dirty_background_bytes"])
    set_knob(journal, KNOBS["dirty_expire_centisecs"], str(k["dirty_expire_centisecs"]))
    set_knob(journal, KNOBS["dirty_writeback_centisecs"], str(k["dirty_writeback_centisecs"]))
    if not any(m["kind"] == "file" for t in resolved["task"] for m in t["mapping"]):
        return
    pc = resolved["pagecache"]
    disk = block_dev_of(opts.workdir)
    if disk is None or not os.path.exists(READ_AHEAD_KB.format(disk=disk)):
        raise PreconditionError(f"{opts.workdir} is not on a block device with a request queue: "
                                "pagecache.read_ahead_kb cannot be set for the file mappings' data files")
    set_knob(journal, READ_AHEAD_KB.format(disk=disk), str(pc["read_ahead_kb"]))
    if pc["fault_around_bytes"] != _HOST_FAULT_AROUND_BYTES:
        notes.append(f"pagecache.fault_around_bytes = {pc['fault_around_bytes']} is simulated only: the host keeps "
                     f"its debugfs value (default {_HOST_FAULT_AROUND_BYTES})")


def _read_ahead_kb(workdir: str) -> Optional[str]:
    """The read_ahead_kb of the disk holding file mappings' data files (None when unknown)."""
    disk = block_dev_of(workdir) if os.path.isdir(workdir) else None
    path = READ_AHEAD_KB.format(disk=disk) if disk else None
    return read(path) if path and os.path.exists(path) else None


def _run(text, source, overrides, resolved, notes, opts, journal, workers, run_index) -> Dict[str, Any]:
    k = resolved["kernel"]
    # 1. knobs (kernel-algorithms.md §8)
    set_knob(journal, KNOBS["swappiness"], str(k["swappiness"]))
    set_knob(journal, KNOBS["page_cluster"], str(k["page_cluster"]))
    vma = k["vma_ra_enabled"]
    if k["readahead"] == "adaptive":
        vma = False
    set_knob(journal, KNOBS["vma_ra_enabled"], "true" if vma else "false")
    if os.path.exists(KNOBS["zswap"]):
        set_knob(journal, KNOBS["zswap"], "Y" if opts.zswap else "N")
    elif opts.zswap:
        raise PreconditionError("zswap is unavailable on this host")
    if os.path.exists(MGLRU):
        set_knob(journal, MGLRU, "n")  # the workload asks for the classic LRU
    if any(m["kind"] == "file" for t in resolved["task"] for m in t["mapping"]) or resolved["swap"]:
        swapdev.make_workdir(journal, opts.workdir)
    _set_page_cache_knobs(journal, resolved, opts, notes)
    # 2. swap devices
    devices = swapdev.setup(journal, resolved, opts.swap_backend, opts.workdir)
    ra_mode = swapdev.readahead_in_effect(devices, vma, k["page_cluster"])
    if k["readahead"] == "vma" and not ra_mode.startswith("vma"):
        raise PreconditionError(f"kernel.readahead = \"vma\" is unavailable with these swap devices: the kernel uses {ra_mode} "
                                "(a rotational swap device turns VMA readahead off system-wide; use --swap-backend loop or zram)")
    # 3. cgroup
    limit = memory_limit(resolved)
    group = cg.MemCgroup(journal, f"swaplab-{os.getpid()}-{run_index}", limit, k["swappiness"])
    _say(opts, f"cgroup v{group.version} {group.path} limit {limit >> 20} MiB; swap: "
               + "; ".join(d.description for d in devices) + f"; readahead in effect: {ra_mode}")
    # 4. workers: prepared outside the cgroup, moved in before they touch anything. Their
    # file-mapping data files go into a journalled run directory, removed on every exit path.
    datadir = opts.workdir
    if any(m["kind"] == "file" for t in resolved["task"] for m in t["mapping"]):
        datadir = os.path.join(opts.workdir, f"swaplab-{os.getpid()}-{run_index}.d")
        journal.push({"op": "rundir", "path": datadir})
        os.mkdir(datadir, 0o700)
    for ti, t in enumerate(resolved["task"]):
        for inst in range(t["instances"]):
            workers.append(_spawn(text, source, overrides, ti, inst, t["name"], datadir, opts))
    for w in workers:
        line = w.proc.stdout.readline()
        msg = json.loads(line) if line.strip() else {"error": f"worker exited (status {w.proc.poll()}): {_stderr(w)}"}
        if "error" in msg:
            raise HostError(f"worker {w.label}: {msg['error']}")
        group.add(w.proc.pid)
        journal.push({"op": "kill", "pid": w.proc.pid, "start": _proc_start(w.proc.pid)})
        w.reader = threading.Thread(target=_read_lines, args=(w,), daemon=True)
        w.reader.start()
    # 5. go
    sim_limit = (resolved["sim"].get("time_limit") or 0) / 1e9
    timeout = opts.timeout_s or (max(600.0, 20 * sim_limit) if sim_limit else 3600.0)
    interval = max(int(resolved["sim"]["sample_interval"]), SAMPLER_POLL_NS)
    disks0 = {d.name: disk_stat(d.disk) for d in devices if d.disk}
    disks0[_CPU_TIMES] = cpu_times()
    disks0[_TLB_IPIS] = tlb_ipis_received()
    v0 = vmstat()
    st0 = group.stat()
    t0 = _core.host_now_ns() + 20_000_000
    for w in workers:
        w.proc.stdin.write(json.dumps({"go": t0}) + "\n")
        w.proc.stdin.flush()
    ts = _Series(interval)
    events: List[Dict[str, Any]] = []
    swap_peak = 0
    next_sample = t0
    oom = False
    while True:
        now = _core.host_now_ns()
        if now >= next_sample:
            lru = group.lru_pages()
            swap_peak = max(swap_peak, lru["swap"])
            ts.sample(max(0, now - t0), vmstat(), v0, group, lru, limit, devices)
            next_sample += interval
        pending = 0
        for w in workers:
            if w.result is None and w.lines:
                w.result = json.loads(w.lines[0])
            if w.result is not None:
                continue
            rc = w.proc.poll()
            if rc is not None:
                w.reader.join(timeout=1)
                if w.lines:
                    w.result = json.loads(w.lines[0])
                    continue
                if rc == -signal.SIGKILL and not w.killed_by_us:
                    oom = True
                    lru = group.lru_pages()
                    events.append({"t_ns": max(0, now - t0), "kind": "oom_kill", "task": w.label,
                                   "rss_pages": lru["nr_active_anon"] + lru["nr_inactive_anon"], "swap_pages": lru["swap"]})
                    w.error = "killed by SIGKILL (OOM killer)"
                else:
                    raise HostError(f"worker {w.label} exited with status {rc}: {_stderr(w)}")
            else:
                pending += 1
        if group.oom_kills() > group.oom0:
            oom = True
        if oom or pending == 0:
            break
        _release_finished(workers)
        if (now - t0) / 1e9 > timeout:
            raise HostError(f"the run exceeded its wall-clock timeout of {timeout:.0f} s")
        time.sleep(SAMPLER_POLL_NS / 1e9)
    if oom:
        raise OOMKilled(f"the OOM killer killed a worker ({', '.join(e['task'] for e in events) or 'memcg oom_kill event'}); "
                        "this run's counters are not a measurement")
    # 6. after: the workers still hold their memory
    v1 = vmstat()
    pool = zswap.pool_snapshot() if opts.zswap else None
    st1 = group.stat()
    lru = group.lru_pages(st1)
    swap_peak = max(swap_peak, lru["swap"])
    ts.sample(max(0, _core.host_now_ns() - t0), v1, v0, group, lru, limit, devices)
    disks1 = {d.name: disk_stat(d.disk) for d in devices if d.disk}
    disks1[_CPU_TIMES] = cpu_times()
    disks1[_TLB_IPIS] = tlb_ipis_received()
    for w in workers:
        _release(w)
    out = _result(resolved, devices, ra_mode, group, v0, v1, st0, st1, swap_peak, disks0, disks1,
                  workers, t0, ts, events, notes, opts)
    if pool is not None:
        for k in zswap.VMSTAT:
            out["vmstat"][k] = v1.get(k, 0) - v0.get(k, 0)
            out["host"]["vmstat_other"].pop(k, None)
        out["store"] = zswap.store_result(pool)
        out["host"]["zswap_parameters"] = zswap.params()
    return out


def _release(w: _Worker) -> None:
    """Close the worker's stdin: it unmaps its memory (and removes its data files) and exits."""
    if not w.released:
        w.released = True
        try:
            w.proc.stdin.close()
        except Exception:
            pass


def _release_finished(workers: List[_Worker]) -> None:
    """A task that finishes while others still run exits, as the simulated task does
    (finish_task zaps its mappings): its anonymous memory is freed and its files' pages are
    dropped, so the tasks still running get the room. The tasks still running when the last
    one finishes keep their memory until the final counters are read."""
    for w in workers:
        if w.result is not None:
            _release(w)


def _proc_start(pid: int) -> Optional[str]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class _Series:
    def __init__(self, interval_ns: int):
        self.interval_ns = interval_ns
        self.d: Dict[str, List[Any]] = {k: [] for k in ("t_ns", "nr_free_pages", "nr_active_anon", "nr_inactive_anon",
                                                         "nr_active_file", "nr_inactive_file", "swap_used_pages",
                                                         "nr_dirty", "nr_writeback", "pswpin", "pswpout",
                                                         "ra_hit_rate")}
        self.last_ra = (0, 0)

    def sample(self, t, v, v0, group, lru, limit, devices):
        d = self.d
        d["t_ns"].append(t)
        # inside a memory cgroup, "free" is the room left below its limit
        d["nr_free_pages"].append(max(0, (limit - group.usage_bytes()) // PAGE))
        for key in ("nr_active_anon", "nr_inactive_anon", "nr_active_file", "nr_inactive_file", "nr_dirty",
                    "nr_writeback"):
            d[key].append(lru[key])
        d["swap_used_pages"].append(_swap_used_pages(devices))
        d["pswpin"].append(v.get("pswpin", 0) - v0.get("pswpin", 0))
        d["pswpout"].append(v.get("pswpout", 0) - v0.get("pswpout", 0))
        ra = v.get("swap_ra", 0) - v0.get("swap_ra", 0)
        hit = v.get("swap_ra_hit", 0) - v0.get("swap_ra_hit", 0)
        dra, dhit = ra - self.last_ra[0], hit - self.last_ra[1]
        self.last_ra = (ra, hit)
        d["ra_hit_rate"].append(round(dhit / dra, 4) if dra > 0 else None)


def _swap_used_pages(devices) -> int:
    paths = {d.swap_path for d in devices}
    used = 0
    with open("/proc/swaps") as f:
        for line in f.read().splitlines()[1:]:
            parts = line.split()
            if parts and parts[0] in paths:
                used += int(parts[3]) // 4
    return used


def _pct_zero() -> Dict[str, Any]:
    return {"mean": 0.0, "p50": 0, "p90": 0, "p99": 0, "p99.9": 0, "max": 0}


def counters(v0: Dict[str, int], v1: Dict[str, int]) -> Tuple[Dict[str, int], List[str]]:
    """Deltas under the simulator's counter names; `allocstall` is the sum over zones."""
    out: Dict[str, int] = {}
    missing = []
    for name in _core.host_counter_names():
        if name == "allocstall" and name not in v1:
            out[name] = sum(v1[k] - v0.get(k, 0) for k in v1 if k.startswith("allocstall_"))
        elif name in v1:
            out[name] = v1[name] - v0.get(name, 0)
        else:
            out[name] = 0
            missing.append(name)
    return out, missing


# Task fields of the result schema that host runs report as zero: message-passing workloads are
# refused on the host, and a task's dirty-throttling pauses have no per-task counter in /proc
# (only the balance_dirty_pages tracepoint shows them).
_UNMEASURED_TASK_FIELDS = {"messages_sent": 0, "messages_received": 0, "ipc_wait_ns": 0, "verify_errors": 0,
                           "dirty_pauses": 0, "dirty_throttled_ns": 0,
                           # what each touch met (a swap-cache hit, a major fault, ...) is the
                           # simulator's own bookkeeping: the host cannot tell a touch's kind
                           "touch_kinds": None}

#: Key of /proc/stat's CPU times among the before/after device snapshots.
_CPU_TIMES = "/proc/stat cpu"


def cpu_times() -> Dict[str, int]:
    """The machine's CPU time in USER_HZ ticks from /proc/stat's ``cpu`` line: iowait and the
    total of every column."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                cols = [int(x) for x in line.split()[1:]]
                return {"iowait": cols[4], "total": sum(cols[:8])}
    return {"iowait": 0, "total": 0}


_TLB_IPIS = "/proc/interrupts TLB"


def tlb_ipis_received(path: str = "/proc/interrupts") -> Optional[int]:
    """TLB-flush IPIs taken so far, summed over CPUs (the "TLB shootdowns" line of
    /proc/interrupts, x86); None where there is no such line (arm64 broadcasts its
    invalidations). The line is parsed by calibrate's TLB probe (crates/host/src/tlb_probe.rs)."""
    try:
        with open(path) as f:
            counts = _core.host_tlb_interrupts(f.read())
    except OSError:
        return None
    return sum(counts) if counts is not None else None


def _tlb_ipis(disks0: Dict[str, Any], disks1: Dict[str, Any]) -> Optional[int]:
    a, b = disks0.get(_TLB_IPIS), disks1.get(_TLB_IPIS)
    return b - a if a is not None and b is not None else None


def _iowait(disks0: Dict[str, Any], disks1: Dict[str, Any]) -> Tuple[float, float]:
    """(cpu_iowait_s, iowait_pct) between the two snapshots, as the simulator reports them."""
    a, b = disks0.get(_CPU_TIMES), disks1.get(_CPU_TIMES)
    if not a or not b or b["total"] <= a["total"]:
        return 0.0, 0.0
    hz = os.sysconf("SC_CLK_TCK")
    iow = b["iowait"] - a["iowait"]
    return iow / hz, round(100.0 * iow / (b["total"] - a["total"]), 2)


def _is_background(resolved, task_name) -> bool:
    return any(t.get("background", False) for t in resolved.get("task", []) if t.get("name") == task_name)


def _result(resolved, devices, ra_mode, group, v0, v1, st0, st1, swap_peak, disks0, disks1,
            workers, t0, ts, events, notes, opts) -> Dict[str, Any]:
    vm, missing = counters(v0, v1)
    other = {k: v1[k] - v0.get(k, 0) for k in v1 if k not in vm and v1[k] != v0.get(k, 0)}
    tasks, extra = [], []
    for w in workers:
        r = w.result
        tasks.append({
            "name": w.task, "instance": w.instance, "pid": r["pid"],
            "start_ns": max(0, r["start_mono_ns"] - t0), "end_ns": max(0, r["end_mono_ns"] - t0),
            "elapsed_ns": r["elapsed_ns"], "touches": r["touches"], "phase_elapsed_ns": r["phase_elapsed_ns"],
            "cpu_ns": r["cpu_ns"], "phase_cpu_ns": r["phase_cpu_ns"],
            "minor_faults": r["minor_faults"], "major_faults": r["major_faults"],
            "touch_latency_ns": r["touch_latency_ns"], "fault_latency_ns": r["fault_latency_ns"],
            "direct_reclaim": {"calls": 0, "stall_ns": 0, "pages_reclaimed": 0,
                               "stall_ns_pct": _pct_zero(), "pages_per_call_pct": _pct_zero()},
            "oom_killed": False,
            "runqueue_wait_ns": r.get("runqueue_wait_ns", 0),
            "throughput_bytes_per_s": r["throughput_bytes_per_s"],
            "background": _is_background(resolved, w.task),
            "file_reads": r["file_reads"], "file_writes": r["file_writes"],
            **_UNMEASURED_TASK_FIELDS,
        })
        extra.append({"task": w.label, "slow_touches": r["slow_touches"], "fault_threshold_ns": r["fault_threshold_ns"],
                      "time_limited": r["time_limited"], "compute_ns": r["compute_ns"]})
    elapsed = max((t["end_ns"] for t in tasks), default=0)
    cg_delta = {k: st1[k] - st0.get(k, 0) for k in st1 if k in _CG_EVENTS}
    cg_now = {k: st1[k] for k in st1 if k not in _CG_EVENTS}
    devs = []
    cpu_iowait_s, iowait_pct = _iowait(disks0, disks1)
    for d in devices:
        a, b = disks0.get(d.name), disks1.get(d.name)
        if a is None or b is None:
            continue
        devs.append({"name": d.name, "role": "swap",
                     "requests": (b["reads"] - a["reads"]) + (b["writes"] - a["writes"]),
                     "pages_read": (b["read_sectors"] - a["read_sectors"]) // 8,
                     "pages_written": (b["write_sectors"] - a["write_sectors"]) // 8,
                     "busy_ns": (b["io_ticks_ms"] - a["io_ticks_ms"]) * 1_000_000,
                     # the whole disk's reads (the swap file's and anything else on it)
                     "reads": b["reads"] - a["reads"],
                     "read_ticks_ns": (b.get("read_ticks_ms", 0) - a.get("read_ticks_ms", 0)) * 1_000_000})
    ra_hit_pct = round(100.0 * vm["swap_ra_hit"] / vm["swap_ra"], 2) if vm.get("swap_ra") else None
    config = {k: v for k, v in resolved.items()}
    info = host_info()
    return {
        "schema": 1,
        "swaplab_version": _core.version(),
        "kind": "host",
        "host": {
            **info,
            "swap_device": "; ".join(d.description for d in devices) or "none",
            "swap_devices": [d.to_json() for d in devices],
            "readahead_in_effect": ra_mode,
            "runs": 1,
            "cgroup": {"version": group.version, "path": group.path, "limit_bytes": group.limit_bytes,
                       "stat_delta": cg_delta, "stat_end": cg_now,
                       "swap_peak_pages": swap_peak, "swap_end_pages": group.lru_pages(st1)["swap"],
                       "oom_kill": group.oom_kills() - group.oom0},
            "knobs": {"page_cluster": read(KNOBS["page_cluster"]), "swappiness": read(KNOBS["swappiness"]),
                      "vma_ra_enabled": read(KNOBS["vma_ra_enabled"]),
                      "zswap": read(KNOBS["zswap"]) if os.path.exists(KNOBS["zswap"]) else None,
                      **{knob: read(KNOBS[knob]) for knob in _DIRTY_KNOBS},
                      "read_ahead_kb": _read_ahead_kb(opts.workdir)},
            "vmstat_other": other,
            "counters_missing_on_host": missing,
            "task_details": extra,
            "unmeasured": ["tasks[].direct_reclaim (the kernel has no per-task direct-reclaim statistics; see vmstat allocstall)",
                           "kswapd_cpu_by_category and direct_reclaim_cpu_by_category (a profile of reclaim needs perf, "
                           "which the host runner does not run)",
                           "tasks[].fault_latency_ns counts touches slower than fault_threshold_ns as faults"],
            "notes": notes + (["cgroup v1 memory.stat has no pswpin/pswpout: swap-out inside the cgroup shows as "
                               "cgroup.swap_peak_pages (and /proc/vmstat's pswpout, as no other swap is on)"]
                              if group.version == 1 else []),
        },
        "name": resolved.get("name", ""),
        "seed": resolved["seed"],
        "config": config,
        "interrupted": False,
        "elapsed_ns": elapsed,
        "vmstat": vm,
        "kswapd_cpu_by_category": None,
        "direct_reclaim_cpu_by_category": None,
        "tasks": tasks,
        "timeseries": ts.d,
        "events": events,
        "devices": devs,
        "summary": {"ra_hit_pct": ra_hit_pct, "elapsed_s": elapsed / 1e9, "readahead": ra_mode,
                    "messages": 0, "channel_pages_max": 0, "timeseries_interval_ns": ts.interval_ns,
                    "cpu_iowait_s": cpu_iowait_s, "iowait_pct": iowait_pct,
                    # No /proc/vmstat counter for too_many_isolated sleeps: not measured.
                    "reclaim_isolated_sleeps": None,
                    # lru_lock contention: no host counter (a lock_stat kernel would be needed).
                    "lru_lock_acquisitions": None, "lru_lock_contended": None,
                    "lru_lock_reclaim_spin_s": None, "lru_lock_access_spin_s": None,
                    # 2.6.28's anon_vma->lock: no counter either.
                    "anon_vma_lock_acquisitions": None, "anon_vma_lock_contended": None,
                    "anon_vma_lock_reclaim_spin_s": None, "anon_vma_lock_exit_spin_s": None,
                    "lru_note_cost_walks": None, "memcg_ancestor_lock_acquisitions": None,
                    "memcg_ancestor_lock_contended": None, "memcg_ancestor_lock_spin_s": None,
                    "workingset_line_adds": None, "workingset_line_waited": None,
                    "workingset_line_wait_s": None, "workingset_line_cpu_s": None,
                    # TLB-flush IPIs: /proc/interrupts counts every origin's, the workload's
                    # and the rest of the machine's (a few per second on a quiet one); the
                    # flushes that sent them have no counter (nr_tlb_remote_flush needs
                    # CONFIG_DEBUG_TLBFLUSH), nor have arm64's broadcast invalidations.
                    "tlb_shootdowns": None, "tlb_ipis": _tlb_ipis(disks0, disks1),
                    "tlb_shootdown_initiator_s": None, "tlb_ipi_receive_s": None, "tlb_broadcast_waits": None,
                    # The refault path's memcg statistics flushes (5.15-5.17): no counter.
                    "memcg_refault_flushes": None, "memcg_refault_flush_skipped": None,
                    "memcg_refault_flush_s": None, "memcg_rstat_updater_spin_s": None,
                    # reclaim's (5.15-6.1, classic shrink_node): no counter either.
                    "memcg_reclaim_flushes": None, "memcg_reclaim_flush_skipped": None,
                    "memcg_reclaim_flush_s": None,
                    # Reclaim's congestion_wait naps by who took them: no kernel counter.
                    "congestion_naps_alloc": None, "congestion_naps_direct_reclaim": None,
                    "congestion_naps_kswapd": None,
                    # Xen steal (the simulator's Xen PV guests only): the host is not one.
                    "cpu_steal_s": None, "steal_stretches": None},
    }


# memory.stat entries that are event counters (deltas) rather than current sizes
_CG_EVENTS = {"pgpgin", "pgpgout", "pgfault", "pgmajfault", "workingset_refault_anon", "workingset_refault_file",
              "workingset_activate_anon", "workingset_activate_file", "workingset_restore_anon",
              "workingset_restore_file", "workingset_nodereclaim", "pswpin", "pswpout", "pgscan", "pgsteal",
              "pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct", "pgrefill", "pgactivate",
              "pgdeactivate", "pglazyfree", "pglazyfreed", "zswpin", "zswpout", "zswpwb", "swpin_zero", "swpout_zero",
              "pgscan_khugepaged", "pgsteal_khugepaged", "pgscan_proactive", "pgsteal_proactive",
              "total_pgpgin", "total_pgpgout", "total_pgfault", "total_pgmajfault",
              "total_workingset_refault_anon", "total_workingset_refault_file"}


# --------------------------------------------------------------------------- several runs


def run_host(path_or_text: str, overrides: Optional[List[str]] = None, opts: Optional[HostOptions] = None,
             source: Optional[str] = None) -> Dict[str, Any]:
    """Run a workload ``opts.runs`` times (each OOM-killed run retried up to ``opts.retries``
    times). The result has the simulator's schema: counters are per-counter medians, elapsed
    is the median, tasks come from the run with the median elapsed time; ``host.per_run`` and
    ``host.spread`` hold every run. If every attempt was OOM-killed, the result is an OOM
    result (``tasks[].oom_killed``, an ``oom_kill`` event) with no measured counters."""
    from ..api import load_workload

    opts = opts or HostOptions()
    overrides = list(overrides or [])
    if source is None and os.path.exists(path_or_text):
        text, source = load_workload(path_or_text)
    else:
        text, source = path_or_text, source or "<text>"
    results: List[Dict[str, Any]] = []
    ooms: List[str] = []
    with RunSignals() as sig, HostLock(opts.journal_dir):
        for i in range(opts.runs):
            for attempt in range(opts.retries + 1):
                try:
                    _say(opts, f"host run {i + 1}/{opts.runs}" + (f" (retry {attempt})" if attempt else ""))
                    results.append(run_once(text, source, overrides, opts, run_index=i, sig=sig))
                    break
                except OOMKilled as e:
                    ooms.append(f"run {i + 1} attempt {attempt + 1}: {e}")
                    _say(opts, f"OOM: {e}")
    if not results:
        return _oom_result(text, source, overrides, ooms, opts)
    out = aggregate(results)
    out["host"]["oom_attempts"] = ooms
    return out


def _median(xs: List[float]) -> float:
    return statistics.median(xs) if xs else 0


def aggregate(results: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Median over runs (see run_host). Elapsed times vary by +-30% between runs on shared
    machines while swap counters are stable, so the spread is reported beside each median."""
    if len(results) == 1:
        r = results[0]
        r["host"]["per_run"] = [{"elapsed_ns": r["elapsed_ns"], "vmstat": r["vmstat"]}]
        r["host"]["spread"] = {k: {"median": v, "min": v, "max": v} for k, v in list(r["vmstat"].items()) + [("elapsed_ns", r["elapsed_ns"])]}
        return r
    el = [r["elapsed_ns"] for r in results]
    med = sorted(range(len(results)), key=lambda i: el[i])[(len(results) - 1) // 2]
    out = json.loads(json.dumps(results[med]))
    spread = {}
    for k in out["vmstat"]:
        xs = [r["vmstat"][k] for r in results]
        out["vmstat"][k] = int(round(_median(xs)))
        spread[k] = {"median": _median(xs), "min": min(xs), "max": max(xs)}
    spread["elapsed_ns"] = {"median": _median(el), "min": min(el), "max": max(el)}
    out["elapsed_ns"] = int(_median(el))
    out["summary"]["elapsed_s"] = out["elapsed_ns"] / 1e9
    vm = out["vmstat"]
    out["summary"]["ra_hit_pct"] = round(100.0 * vm["swap_ra_hit"] / vm["swap_ra"], 2) if vm.get("swap_ra") else None
    ipis = [r["summary"].get("tlb_ipis") for r in results]
    if None not in ipis:
        out["summary"]["tlb_ipis"] = int(round(_median(ipis)))
        spread["tlb_ipis"] = {"median": _median(ipis), "min": min(ipis), "max": max(ipis)}
    out["host"]["runs"] = len(results)
    out["host"]["aggregate"] = f"per-counter medians of {len(results)} runs; tasks and timeseries from the median-elapsed run"
    out["host"]["per_run"] = [{"elapsed_ns": r["elapsed_ns"], "vmstat": r["vmstat"],
                               "tasks_elapsed_ns": [t["elapsed_ns"] for t in r["tasks"]]} for r in results]
    out["host"]["spread"] = spread
    if out.get("store"):
        for k in out["store"]["debugfs"]:
            xs = [r["store"]["debugfs"][k] for r in results]
            out["store"]["debugfs"][k] = int(round(_median(xs)))
            spread[f"store.{k}"] = {"median": _median(xs), "min": min(xs), "max": max(xs)}
        out["store"]["pool_pages"] = out["store"]["debugfs"]["pool_total_size"] // PAGE
        for pr, r in zip(out["host"]["per_run"], results):
            pr["store"] = r["store"]["debugfs"]
    return out


def _oom_result(text, source, overrides, ooms, opts) -> Dict[str, Any]:
    resolved = json.loads(_core.resolve(text, source, overrides))
    tasks = []
    for t in resolved["task"]:
        for inst in range(t["instances"]):
            tasks.append({"name": t["name"], "instance": inst, "pid": 0, "start_ns": 0, "end_ns": 0, "elapsed_ns": 0,
                          "touches": 0, "phase_elapsed_ns": [0] * len(t["phase"]),
                          "cpu_ns": 0, "phase_cpu_ns": [0] * len(t["phase"]), "minor_faults": 0, "major_faults": 0,
                          "touch_latency_ns": _pct_zero(), "fault_latency_ns": _pct_zero(),
                          "direct_reclaim": {"calls": 0, "stall_ns": 0, "pages_reclaimed": 0,
                                             "stall_ns_pct": _pct_zero(), "pages_per_call_pct": _pct_zero()},
                          "oom_killed": True, "runqueue_wait_ns": 0, "throughput_bytes_per_s": 0.0,
                          "background": bool(t.get("background", False)), **_UNMEASURED_TASK_FIELDS})
    vm = {n: 0 for n in _core.host_counter_names()}
    return {
        "schema": 1, "swaplab_version": _core.version(), "kind": "host",
        "host": {**host_info(), "swap_device": None, "readahead_in_effect": None, "runs": 0, "oom": True,
                 "oom_attempts": ooms, "notes": ["every attempt was OOM-killed: no counters were measured (all zero here)"]},
        "name": resolved.get("name", ""), "seed": resolved["seed"], "config": resolved, "interrupted": False,
        "elapsed_ns": 0, "vmstat": vm, "tasks": tasks,
        "timeseries": {k: [] for k in ("t_ns", "nr_free_pages", "nr_active_anon", "nr_inactive_anon", "nr_active_file",
                                       "nr_inactive_file", "swap_used_pages", "nr_dirty", "nr_writeback", "pswpin",
                                       "pswpout", "ra_hit_rate")},
        "events": [{"t_ns": 0, "kind": "oom_kill", "task": f"{t['name']}#{t['instance']}", "rss_pages": 0, "swap_pages": 0}
                   for t in tasks[:1]],
        "devices": [], "summary": {"ra_hit_pct": None, "elapsed_s": 0.0, "readahead": "",
                                   "messages": 0, "channel_pages_max": 0, "timeseries_interval_ns": 0,
                                   "cpu_iowait_s": 0.0, "iowait_pct": 0.0, "reclaim_isolated_sleeps": None,
                                   "lru_lock_acquisitions": None, "lru_lock_contended": None,
                                   "lru_lock_reclaim_spin_s": None, "lru_lock_access_spin_s": None,
                                   "anon_vma_lock_acquisitions": None, "anon_vma_lock_contended": None,
                                   "anon_vma_lock_reclaim_spin_s": None, "anon_vma_lock_exit_spin_s": None,
                                   "lru_note_cost_walks": None, "memcg_ancestor_lock_acquisitions": None,
                                   "memcg_ancestor_lock_contended": None, "memcg_ancestor_lock_spin_s": None,
                                   "workingset_line_adds": None, "workingset_line_waited": None,
                                   "workingset_line_wait_s": None, "workingset_line_cpu_s": None,
                                   "tlb_shootdowns": None, "tlb_ipis": None,
                                   "tlb_shootdown_initiator_s": None, "tlb_ipi_receive_s": None,
                                   "tlb_broadcast_waits": None, "memcg_refault_flushes": None,
                                   "memcg_refault_flush_skipped": None, "memcg_refault_flush_s": None,
                                   "memcg_rstat_updater_spin_s": None, "memcg_reclaim_flushes": None,
                                   "memcg_reclaim_flush_skipped": None, "memcg_reclaim_flush_s": None,
                                   "congestion_naps_alloc": None,
                                   "congestion_naps_direct_reclaim": None, "congestion_naps_kswapd": None,
                                   "cpu_steal_s": None, "steal_stretches": None},
    }
