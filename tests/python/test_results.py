"""Result files: atomic, complete, deterministic; Ctrl-C exits 130 with no partial file."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import swaplab
from swaplab.io import write_atomic
from conftest import EXAMPLES, EXPERIMENTS, ROOT, run_cli


def test_run_prints_a_table_and_writes_json(small_toml, tmp_path):
    out = tmp_path / "r.json"
    proc = run_cli("run", small_toml, "--json", out)
    assert proc.returncode == 0, proc.stderr
    for word in ("pswpin", "pswpout", "ra_hit%", "pgmajfault", "allocstall", "oom_kill", "seq#0", "p99.9"):
        assert word in proc.stdout, word
    raw = json.loads(out.read_text())
    assert raw["swaplab_version"] == swaplab.__version__
    assert raw["config"]["machine"]["ram"] == 96 << 20
    assert raw["tasks"] and raw["tasks"][0]["touches"] == 2 * 64 * 256


def test_run_quiet_and_plot(small_toml, tmp_path):
    png = tmp_path / "r.png"
    proc = run_cli("run", small_toml, "--quiet", "--plot", png)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_runs_give_identical_json(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        proc = run_cli("run", EXAMPLES / "quick.toml", "--quiet", "--json", out)
        assert proc.returncode == 0, proc.stderr
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_text())["tasks"], "the run must produce task results"


def test_a_different_seed_changes_a_random_run(small_toml):
    a = swaplab.simulate(small_toml, {"task.0.phase.0.pattern": "random"})
    b = swaplab.simulate(small_toml, {"task.0.phase.0.pattern": "random", "seed": 2})
    assert a.raw["tasks"] and a.raw["tasks"] != b.raw["tasks"]


def test_failed_run_does_not_clobber_an_existing_file(small_toml, tmp_path):
    out = tmp_path / "r.json"
    out.write_text("previous result\n")
    proc = run_cli("run", small_toml, "--set", "kernel.readahead=bogus", "--json", out)
    assert proc.returncode == 2
    assert out.read_text() == "previous result\n"
    assert sorted(os.listdir(tmp_path)) == sorted(["r.json", "small.toml"])


def test_write_atomic_failure_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    target.write_text("old")

    def boom(fd):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        write_atomic(target, "new contents")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["x.json"]
    write_atomic(target, "new contents")
    assert target.read_text() == "new contents"
    assert os.listdir(tmp_path) == ["x.json"]


def _interrupt(args, tmp_path, after=2.0):
    proc = subprocess.Popen([sys.executable, "-m", "swaplab", *map(str, args)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("Ctrl-C did not stop the run within 60 s")
    return proc.returncode, out, err


def test_ctrl_c_during_run_exits_130_without_a_file(tmp_path):
    out = tmp_path / "big.json"
    big = EXPERIMENTS / "workloads" / "vm-scalability-combined.toml"  # minutes at full size
    rc, stdout, stderr = _interrupt(["run", big, "--json", out], tmp_path)
    assert rc == 130, (rc, stderr)
    assert "Traceback" not in stderr
    assert "interrupted" in stderr
    assert not out.exists()
    assert os.listdir(tmp_path) == []


def test_ctrl_c_during_reproduce_exits_130_without_a_file(tmp_path):
    out = tmp_path / "rep.json"
    rc, stdout, stderr = _interrupt(["reproduce", "vma-ra-2017-combined", "--jobs", "2", "--json", out], tmp_path)
    assert rc == 130, (rc, stderr)
    assert "Traceback" not in stderr
    assert os.listdir(tmp_path) == []


def test_bench_prints_figures():
    proc = run_cli("bench", "--quick", "--json", timeout=900)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    for key in ("resident_touches_per_s", "major_faults_per_s", "mglru_major_faults_per_s", "bytes_per_frame"):
        assert key in figures and figures[key] > 0, key
    proc = run_cli("bench", "--quick", timeout=900)
    assert proc.returncode == 0 and "resident_touches_per_s" in proc.stdout


# Run the CLI with os.fork wrapped so that the n-th forked pool worker and the parent both get
# SIGINT right after the fork, before the worker's initializer could ignore it: what a
# terminal's Ctrl-C (sent to the whole process group) does when it lands while the pool starts.
_CTRL_C_AT_FORK = """
import os, signal, sys
n, real_fork, forks = int(sys.argv[1]), os.fork, [0]
def fork():
    forks[0] += 1
    pid = real_fork()
    if pid == 0 and forks[0] == n:
        os.kill(os.getppid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
    return pid
os.fork = fork
from swaplab.cli import main
sys.argv = ["swaplab", *sys.argv[2:]]
sys.exit(main())
"""


@pytest.mark.parametrize("nth_fork", [1, 2])
@pytest.mark.parametrize("command", ["reproduce", "sweep"])
def test_ctrl_c_while_the_pool_starts_exits_130_once(tmp_path, command, nth_fork):
    if command == "reproduce":
        args = ["reproduce", "vma-ra-2017-combined", "--jobs", "2", "--json", tmp_path / "out" / "rep.json"]
    else:
        (tmp_path / "w.toml").write_text((EXAMPLES / "quick.toml").read_text())
        (tmp_path / "g.toml").write_text(f'workload = "{tmp_path / "w.toml"}"\nname = "g"\n[axes]\n'
                                         'kernel.page_cluster = [0, 1, 2, 3]\n')
        args = ["sweep", tmp_path / "g.toml", "--out", tmp_path / "store", "--jobs", "2"]
    proc = subprocess.run([sys.executable, "-c", _CTRL_C_AT_FORK, str(nth_fork), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    # only the program reports the interruption: a worker that caught Ctrl-C would print it too
    assert proc.stderr.count("interrupted") == 1, proc.stderr
    if command == "reproduce":
        assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_touch_kinds_file_every_touch_and_flatten_to_columns(small_toml):
    res = swaplab.simulate(small_toml)
    task = res.raw["tasks"][0]
    kinds = task["touch_kinds"]
    assert sum(k["touches"] for k in kinds.values()) == task["touches"]
    assert kinds["new_page"]["touches"] > 0, kinds
    from swaplab.result import flatten_task
    row = flatten_task(task)
    assert row["touch_kind_new_page_touches"] == kinds["new_page"]["touches"]
    assert row["touch_kind_new_page_p99_9"] == kinds["new_page"]["latency_ns"]["p99.9"]
