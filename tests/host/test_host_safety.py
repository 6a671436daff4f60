"""What a root tool must never do (docs/safety.md), checked on the real machine: a second host
run is refused while one runs, repeated signals cannot interrupt the restore, no data file is
left behind, a result is never written over a device node."""

import glob
import os
import signal
import stat
import subprocess
import sys
import time

from swaplab.host.journal import active_swaps

from conftest import HERE, machine_state

LONG_RUN = ["--set", "task.0.repeat=true", "--set", 'task.0.time_limit="60s"', "--quiet"]


def _swaplab(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "swaplab", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _wait_for_swap(p, timeout=30.0):
    deadline = time.time() + timeout
    while not active_swaps():
        assert p.poll() is None, f"the run ended before switching swap on: {p.communicate()}"
        assert time.time() < deadline, "the run never switched swap on"
        time.sleep(0.02)


def _wait_until_its_workload_runs(p, timeout=30.0):
    """Swap on is not the end of a run's setup: its memory cgroup and run directory come after
    it (runner._run). A snapshot taken between them saw the first run's own cgroup appear and
    blamed the refused run (test_concurrent_host_run_is_refused failed 1 run in 3 on a loaded
    machine). The run is settled once a process is in its cgroup."""
    from swaplab.host import cgroup

    _wait_for_swap(p, timeout)
    root = cgroup.V1_ROOT if cgroup.detect() == 1 else cgroup.V2_ROOT
    procs = os.path.join(root, f"swaplab-{p.pid}-0", "cgroup.procs")
    deadline = time.time() + timeout
    while True:
        try:
            with open(procs) as f:
                if f.read().strip():
                    return
        except FileNotFoundError:
            pass
        assert p.poll() is None, f"the run ended before its workload started: {p.communicate()}"
        assert time.time() < deadline, f"no process ever joined {procs}"
        time.sleep(0.02)


def _static_state():
    """machine_state() without what a running host run changes by itself (swap usage)."""
    state = machine_state()
    state["swaps"] = active_swaps()
    return state


def _file_toml(tmp_path, size="48MiB"):
    """small.toml plus a file-backed mapping the task reads once."""
    text = open(os.path.join(HERE, "small.toml")).read()
    text += (f'\n[[task.mapping]]\nname = "data"\nkind = "file"\nsize = "{size}"\n'
             '[[task.phase]]\nmapping = "data"\npattern = "sequential"\nwrite_ratio = 0.0\n')
    path = tmp_path / "file-mapping.toml"
    path.write_text(text)
    return str(path)


def test_concurrent_host_run_is_refused(host_ready, small_toml):
    first = _swaplab("host", "run", small_toml, *LONG_RUN)
    try:
        _wait_until_its_workload_runs(first)
        state = _static_state()
        second = _swaplab("host", "run", small_toml, "--quiet", "--allow-foreign-swap")
        out, err = second.communicate(timeout=60)
        assert second.returncode == 2, (out, err)
        assert "another swaplab host run is in progress" in err and f"pid {first.pid}" in err, err
        assert _static_state() == state, "the refused run changed the machine"
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 130
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
            subprocess.run([sys.executable, "-m", "swaplab", "host", "cleanup"], capture_output=True)


def test_two_host_runs_started_together_one_refused(host_ready, small_toml):
    runs = [_swaplab("host", "run", small_toml, *LONG_RUN) for _ in range(2)]
    try:
        deadline = time.time() + 60
        while all(p.poll() is None for p in runs):
            assert time.time() < deadline, "neither run was refused"
            time.sleep(0.02)
        refused = next(p for p in runs if p.poll() is not None)
        running = next(p for p in runs if p is not refused)
        err = refused.stderr.read()
        assert refused.returncode == 2 and "another swaplab host run is in progress" in err, err
        running.send_signal(signal.SIGTERM)
        assert running.wait(timeout=60) == 130
    finally:
        for p in runs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_double_sigterm_restores_everything(host_ready, small_toml):
    """SIGTERMs every 5 ms for two seconds after the first: many land during the restore
    (swapoff of a full swap file takes a while), none may cut it short."""
    p = _swaplab("host", "run", small_toml, *LONG_RUN)
    try:
        _wait_for_swap(p)
        time.sleep(1.5)  # let it fill swap, so that swapoff has work to do
        p.send_signal(signal.SIGTERM)
        t_end = time.time() + 2.0
        while p.poll() is None and time.time() < t_end:
            time.sleep(0.005)
            p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 130, (p.returncode, err)
        assert "Traceback" not in err, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # host_ready compares the whole machine state (swaps, knobs, cgroups, journals, files)


def test_sigint_then_sigterm_during_restore_restores_everything(host_ready, small_toml):
    p = _swaplab("host", "run", small_toml, *LONG_RUN)
    try:
        _wait_for_swap(p)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) * 20:
            time.sleep(0.01)
            if p.poll() is not None:
                break
            p.send_signal(sig)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 130, (p.returncode, err)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_no_data_file_left_after_file_mapping_run(host_ready, tmp_path):
    from swaplab.host import run_host

    r = run_host(_file_toml(tmp_path))
    assert r["tasks"][0]["touches"] > 2 * 32768  # the file mapping was read too
    assert glob.glob("/var/tmp/swaplab/swaplab-*") == []


def test_no_data_file_left_after_sigkill_and_cleanup(host_ready, tmp_path):
    p = _swaplab("host", "run", _file_toml(tmp_path, "256MiB"), *LONG_RUN)
    try:
        deadline = time.time() + 60
        while not glob.glob("/var/tmp/swaplab/swaplab-*.d/swaplab-*.data"):
            assert p.poll() is None and time.time() < deadline, "the run never created its data file"
            time.sleep(0.01)
        time.sleep(0.5)
        p.kill()
        p.wait()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    time.sleep(0.5)  # the workers die with their parent
    assert glob.glob("/var/tmp/swaplab/swaplab-*"), "SIGKILL left nothing to clean up: the test proves nothing"
    c = subprocess.run([sys.executable, "-m", "swaplab", "host", "cleanup"], capture_output=True, text=True)
    assert c.returncode == 0, c.stdout + c.stderr
    assert glob.glob("/var/tmp/swaplab/swaplab-*") == [], c.stdout


def test_json_onto_character_device_refused_and_device_intact(host_ready, small_toml, tmp_path):
    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    before = os.lstat(dev)
    for cmd in (["host", "run", small_toml, "--json", str(dev)], ["run", small_toml, "--json", str(dev)]):
        r = subprocess.run([sys.executable, "-m", "swaplab", *cmd, "--quiet"], capture_output=True, text=True)
        assert r.returncode == 2, (cmd, r.stderr)
        assert "character device" in r.stderr and r.stderr.count("\n") == 1, r.stderr
        after = os.lstat(dev)
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


def test_host_run_refuses_bad_workdir_runs_and_retries(host_ready, small_toml, tmp_path):
    afile = tmp_path / "f"
    afile.write_text("x")
    for extra, words in ((["--workdir", str(afile)], "not a directory"), (["--workdir", ""], "empty path"),
                         (["--workdir", "/proc"], "on proc"), (["--runs", "0"], "--runs 0"),
                         (["--retries", "-3"], "--retries -3")):
        r = subprocess.run([sys.executable, "-m", "swaplab", "host", "run", small_toml, "--quiet", *extra],
                           capture_output=True, text=True)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (extra, r.stderr)


def test_allow_foreign_swap_says_counters_may_include_foreign_traffic(host_ready, small_toml):
    from swaplab.host import HostOptions, run_host

    r = run_host(small_toml, opts=HostOptions(allow_foreign_swap=True))
    assert any("may include" in n for n in r["host"]["notes"]), r["host"]["notes"]


def test_host_report_is_headed_host_run_not_simulation(host_ready, small_toml):
    r = subprocess.run([sys.executable, "-m", "swaplab", "host", "run", small_toml], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0]
    assert "host run on" in head and "simulation" not in head, head
    assert "wall-clock time" in r.stdout and "virtual time" not in r.stdout
