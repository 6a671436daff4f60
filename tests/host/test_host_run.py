import json
import os
import signal
import subprocess
import sys
import time

import pytest

from swaplab import _core
from swaplab.host import HostOptions, PreconditionError, run_host
from swaplab.host.journal import active_swaps

from conftest import machine_state


def test_small_run_swaps_in_cgroup_and_vmstat_and_restores(host_ready, small_toml):
    # knobs deliberately different from the machine's, so that restoring them is checked
    before = host_ready["knobs"]
    r = run_host(small_toml, ["kernel.page_cluster=0", "kernel.swappiness=100", "kernel.vma_ra_enabled=false"])
    assert r["kind"] == "host"
    assert r["host"]["kernel"] == os.uname().release
    assert r["vmstat"]["pswpout"] > 0, r["vmstat"]
    assert r["vmstat"]["pswpin"] > 0, r["vmstat"]
    cg = r["host"]["cgroup"]
    if cg["version"] == 2:
        assert cg["stat_delta"]["pswpout"] > 0, cg
    else:  # v1 memory.stat has no pswpout: the cgroup's swap usage is the evidence
        assert cg["swap_peak_pages"] > 0, cg
    assert r["host"]["knobs"]["page_cluster"] == "0"
    assert r["host"]["knobs"]["swappiness"] == "100"
    assert r["host"]["readahead_in_effect"].startswith("cluster")  # page-cluster 0, vma off
    t = r["tasks"][0]
    assert t["touches"] == 2 * 32768
    assert t["minor_faults"] + t["major_faults"] >= 32768
    assert r["elapsed_ns"] > 0 and not t["oom_killed"]
    assert r["devices"][0]["pages_written"] >= r["vmstat"]["pswpout"] * 0.9
    assert machine_state()["knobs"] == before


def test_refuses_when_not_root(host_ready, small_toml):
    with pytest.raises(PreconditionError, match="root"):
        run_host(small_toml, opts=HostOptions(euid=1000))


def test_refuses_foreign_swap(host_ready, small_toml, tmp_path_factory):
    path = "/var/tmp/swaplab-test-foreign-swap"
    with open(path, "wb") as f:
        f.write(b"\0" * (16 << 20))
    os.chmod(path, 0o600)
    try:
        subprocess.run(["mkswap", path], check=True, capture_output=True)
        subprocess.run(["swapon", path], check=True, capture_output=True)
        state = machine_state()
        with pytest.raises(PreconditionError, match="already in use"):
            run_host(small_toml)
        assert machine_state() == state
    finally:
        if path in active_swaps():
            subprocess.run(["swapoff", path], check=True)
        os.unlink(path)


def test_refuses_policies_the_host_kernel_lacks(host_ready, small_toml):
    with pytest.raises(PreconditionError, match="unavailable on this host"):
        run_host(small_toml, ["kernel.readahead=\"fixed\""])
    with pytest.raises(PreconditionError, match="unavailable on this host"):
        run_host(small_toml, ["kernel.bailout=\"kosaki\""])


def test_oom_is_reported_as_oom_not_as_a_measurement(host_ready):
    text = open(os.path.join(os.path.dirname(__file__), "small.toml")).read()
    text = text.split("[[swap]]")[0] + "[[task]]" + text.split("[[task]]")[1]  # no swap at all
    r = run_host(text, source="oom.toml", opts=HostOptions(retries=1))
    assert r["host"]["oom"] is True
    assert len(r["host"]["oom_attempts"]) == 2
    assert all(t["oom_killed"] for t in r["tasks"])
    assert r["events"][0]["kind"] == "oom_kill"


def test_loop_device_is_non_rotational_and_enables_vma_readahead(host_ready, small_toml):
    r = run_host(small_toml, opts=HostOptions(swap_backend="loop"))
    assert r["host"]["readahead_in_effect"] == "vma"
    assert r["host"]["swap_devices"][0]["backend"] == "loop"
    assert r["vmstat"]["pswpout"] > 0 and r["vmstat"]["swap_ra"] > 0


def _wait_for_swap_on(p: subprocess.Popen) -> None:
    """Wait (30 s at most) until the host run in process `p` has switched swap on."""
    deadline = time.time() + 30
    while not active_swaps():
        assert time.time() < deadline and p.poll() is None, "the run never switched swap on"
        time.sleep(0.05)


def test_swap_loop_device_runs_with_direct_io(host_ready, small_toml):
    """While the run swaps, the kernel's own flag for the loop device (/sys/block/loopN/loop/dio)
    says direct I/O: swap I/O reaches the backing file with O_DIRECT, the path `swaplab
    calibrate` measures, not the backing file's page cache."""
    code = ("from swaplab.host import HostOptions, run_host\n"
            f"run_host({small_toml!r}, ['task.0.repeat=true', 'task.0.time_limit=\"20s\"'], "
            "opts=HostOptions(swap_backend='loop'))\n")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        _wait_for_swap_on(p)
        loops = [os.path.basename(s) for s in active_swaps() if os.path.basename(s).startswith("loop")]
        assert loops, f"the run swapped on {active_swaps()}, not a loop device"
        with open(f"/sys/block/{loops[0]}/loop/dio") as f:
            assert f.read().strip() == "1", f"/dev/{loops[0]} runs with buffered I/O"
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_buffered_loop_device_is_refused(host_ready):
    """A loop device the kernel runs without direct I/O is refused, not measured."""
    from swaplab.host.swapdev import _require_direct_io

    path = "/var/tmp/swaplab-test-buffered-loop"
    with open(path, "wb") as f:
        f.truncate(16 << 20)
    dev = subprocess.run(["losetup", "--find"], check=True, capture_output=True, text=True).stdout.strip()
    # configuring a loop device copies the backing disk's rotational flag, and detaching keeps it
    rotational = f"/sys/block/{os.path.basename(dev)}/queue/rotational"
    flag = open(rotational).read().strip()
    try:
        subprocess.run(["losetup", "--direct-io=off", dev, path], check=True, capture_output=True)
        with pytest.raises(PreconditionError, match="buffered I/O"):
            _require_direct_io(dev)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)
        with open(rotational, "w") as f:
            f.write(flag)
        os.unlink(path)


def test_zram_bypasses_readahead(host_ready, small_toml):
    r = run_host(small_toml, ["swap.0.device=\"zram\""])
    assert r["host"]["readahead_in_effect"] == "none (synchronous device)"
    assert r["vmstat"]["pswpout"] > 0
    # single-mapped pages skip the swap cache and readahead on a synchronous device (§1.7)
    assert r["vmstat"]["swap_ra"] < r["vmstat"]["pswpin"] * 0.05 + 8


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_run_restores_the_machine(host_ready, small_toml, sig):
    # a long-running variant: repeat until a 60 s time limit
    code = ("import sys; from swaplab.host import run_host\n"
            "try:\n"
            f"    run_host({small_toml!r}, ['task.0.repeat=true', 'task.0.time_limit=\"60s\"', 'kernel.page_cluster=1'])\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(42)\n")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        _wait_for_swap_on(p)
        time.sleep(1.0)  # let it swap
        p.send_signal(sig)
        assert p.wait(timeout=60) == 42
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_host_and_simulator_results_have_the_same_schema(host_ready, small_toml):
    text = open(small_toml).read()
    sim = json.loads(_core.simulate(text, small_toml, []))
    host = run_host(small_toml)
    assert sim["host"] is None and isinstance(host["host"], dict)
    assert sim["kind"] == "simulation" and host["kind"] == "host"

    def keys(a, b, path):
        if isinstance(a, dict) and isinstance(b, dict):
            assert set(a) == set(b), f"{path}: simulator-only {sorted(set(a) - set(b))}, host-only {sorted(set(b) - set(a))}"
            for k in a:
                if path == "" and k == "host":
                    continue
                keys(a[k], b[k], f"{path}.{k}")
        elif isinstance(a, list) and isinstance(b, list):
            if a and b:
                keys(a[0], b[0], f"{path}[0]")
        else:
            # a value on both sides (its type may differ, e.g. null vs number)
            assert not isinstance(a, (dict, list)) or a in ({}, []) or b is None, f"{path}: {type(a)} vs {type(b)}"

    keys(sim, host, "")
    # every task entry carries exactly the simulator's task fields
    assert sim["tasks"], "the simulator produced no task"
    assert set(host["tasks"][0]) == set(sim["tasks"][0])


def test_the_host_worker_times_each_phase_as_the_simulator_does(host_ready, small_toml, tmp_path):
    """One entry per phase, adding up to the task's elapsed time, on both sides, with the CPU
    it ran per phase; a read-back pass over the swapped-out mapping is timed apart from the
    pass that wrote it."""
    path = tmp_path / "two-phases.toml"
    path.write_text(open(small_toml).read() + '\n[[task.phase]]\nmapping = "buf"\npattern = "sequential"\nwrite_ratio = 0.0\n')
    text = path.read_text()
    sim = json.loads(_core.simulate(text, str(path), []))
    host = run_host(str(path))
    for side in (sim, host):
        t = side["tasks"][0]
        assert len(t["phase_elapsed_ns"]) == 2, (side["kind"], t["phase_elapsed_ns"])
        assert sum(t["phase_elapsed_ns"]) == t["elapsed_ns"], (side["kind"], t)
        assert all(x > 0 for x in t["phase_elapsed_ns"]), (side["kind"], t["phase_elapsed_ns"])
        # CPU per phase adds up to the task's CPU, which is no more than its elapsed time (the
        # host's thread CPU clock and the simulator's time on a CPU alike).
        assert len(t["phase_cpu_ns"]) == 2 and sum(t["phase_cpu_ns"]) == t["cpu_ns"], (side["kind"], t)
        assert 0 < t["cpu_ns"] <= t["elapsed_ns"], (side["kind"], t["cpu_ns"], t["elapsed_ns"])


FILE_ONLY = """
name = "host-file-cold"
seed = 1
[machine]
cpus = 2
ram = "24GiB"
memcg_limit = "96MiB"
[[task]]
name = "reader"
[[task.mapping]]
name = "data"
kind = "file"
size = "48MiB"
[[task.phase]]
mapping = "data"
pattern = "sequential"
access = "{access}"
write_ratio = 0.0
"""


def _charged_file_bytes(r) -> int:
    """The workload cgroup's file pages at the end of the run, from its memory.stat (v2 `file`,
    v1 `cache`), in bytes: the workers still hold their mappings when it is read."""
    cg = r["host"]["cgroup"]
    return cg["stat_end"]["file" if cg["version"] == 2 else "cache"]


def test_file_pages_are_read_cold_and_charged_to_the_workload_cgroup(host_ready, tmp_path):
    """The worker writes its data file, fsyncs it and drops it with POSIX_FADV_DONTNEED before
    the run, so the workload reads every page from the disk and its own memory cgroup is
    charged for them (memory.stat file, and the file LRU pages sampled into the time series)."""
    path = tmp_path / "file-cold.toml"
    path.write_text(FILE_ONLY.format(access="pte"))
    r = run_host(str(path))
    pages = 48 * 256
    assert _charged_file_bytes(r) >= pages * 4096 // 2, f"the workload's cgroup was charged {r['host']['cgroup']['stat_end']}"
    ts = r["timeseries"]
    charged = max(a + i for a, i in zip(ts["nr_active_file"], ts["nr_inactive_file"]))
    assert charged >= pages // 2, f"the workload's cgroup held at most {charged} file pages of {pages}"
    assert r["vmstat"]["pgpgin"] >= pages * 4, f"only {r['vmstat']['pgpgin']} KiB read: the file was cached"
    assert r["vmstat"]["pgmajfault"] >= 1


def test_buffered_read_and_write_phases_run_on_the_host_with_the_workload_page_cache_knobs(host_ready, tmp_path):
    """access = "syscall" phases are pread()/pwrite() of whole pages: the read pass brings the
    file in cold through readahead (pgpgin, no page fault on the file) and charges the
    workload's cgroup; the write pass dirties it under the workload's vm.dirty_bytes. The
    disk's read_ahead_kb and the dirty knobs are the workload's during the run and restored
    after (the fixture compares the machine before and after)."""
    text = FILE_ONLY.format(access="syscall") + """
[[task.phase]]
mapping = "data"
pattern = "sequential"
access = "syscall"
write_ratio = 1.0
[kernel]
dirty_bytes = 33554432
dirty_background_bytes = 8388608
[pagecache]
read_ahead_kb = 256
"""
    path = tmp_path / "file-io.toml"
    path.write_text(text)
    r = run_host(str(path))
    pages = 48 * 256
    t = r["tasks"][0]
    assert (t["file_reads"], t["file_writes"]) == (pages, pages), t
    assert t["major_faults"] == 0 and t["minor_faults"] < 256, t
    assert r["vmstat"]["pgpgin"] >= pages * 4, r["vmstat"]
    assert _charged_file_bytes(r) >= pages * 4096 // 2, r["host"]["cgroup"]["stat_end"]
    knobs = r["host"]["knobs"]
    assert (knobs["dirty_bytes"], knobs["dirty_background_bytes"]) == ("33554432", "8388608"), knobs
    assert knobs["dirty_ratio"] == "0" and knobs["read_ahead_kb"] == "256", knobs
