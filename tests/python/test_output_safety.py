"""Result files go only to a regular file or a new path, checked before the run; reproduce's
outputs are replaced together or not at all; a killed writer's temporary file is cleaned."""

import json
import os
import subprocess
import sys

import pytest

from swaplab.io import OutputError, check_output, write_atomic

from conftest import run_cli


def _one_line_exit_2(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_json_onto_a_fifo_is_refused_and_the_fifo_kept(tmp_path, small_toml):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _one_line_exit_2(run_cli("run", small_toml, "--json", fifo, "--quiet"), "is a FIFO")
    assert os.path.exists(fifo) and not os.path.isfile(fifo)


def test_json_onto_a_symlink_is_refused_and_its_target_untouched(tmp_path, small_toml):
    target = tmp_path / "target.json"
    target.write_text("keep me")
    link = tmp_path / "link.json"
    os.symlink(target, link)
    _one_line_exit_2(run_cli("run", small_toml, "--json", link, "--quiet"), "symbolic link")
    assert os.path.islink(link) and target.read_text() == "keep me"


@pytest.mark.parametrize("path,words", [("", "empty path"), ("/proc/version", "/proc/version"),
                                        ("/proc/swaplab-nope.json", "cannot create a file")])
def test_unwritable_json_is_refused_before_the_run(small_toml, path, words):
    _one_line_exit_2(run_cli("run", small_toml, "--json", path, "--quiet"), words)


def test_json_into_a_missing_directory_creates_it_and_says_so(tmp_path, small_toml):
    out = tmp_path / "new" / "dir" / "r.json"
    proc = run_cli("run", small_toml, "--json", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "created directory" in proc.stderr and out.exists()


def test_write_atomic_refuses_a_path_that_became_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match="directory"):
        write_atomic(tmp_path / "d", "x")
    assert os.listdir(tmp_path) == ["d"]


def test_a_killed_writers_temporary_file_is_cleaned_by_the_next_check(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".r.json.{dead.pid}-abcd.tmp"
    stale.write_bytes(b"\0" * 1000)
    live = tmp_path / f".r.json.{os.getpid()}-efgh.tmp"  # a writer that is still running
    live.write_bytes(b"partial")
    check_output(tmp_path / "r.json")
    assert not stale.exists() and live.exists()


def test_interrupted_reproduce_never_clobbers_the_old_json(tmp_path, monkeypatch):
    """Ctrl-C while the plots are rendered (after the simulations) leaves the old JSON."""
    from swaplab import cli, plots

    out = tmp_path / "rep.json"
    out.write_text('{"old": true}\n')

    def interrupted(rep, path=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "plot_experiment", interrupted)
    rc = cli.main(["reproduce", "vma-ra-2017-linpack", "--scale", "64", "--jobs", "1", "--quiet", "--json", str(out)])
    assert rc == 130
    assert json.loads(out.read_text()) == {"old": True}
    assert sorted(os.listdir(tmp_path)) == ["rep.json"]


def test_reproduce_workers_die_with_their_parent(tmp_path):
    """SIGKILL of reproduce: its pool workers die too (no orphan printing BrokenPipe)."""
    import signal
    import time

    p = subprocess.Popen([sys.executable, "-m", "swaplab", "reproduce", "vma-ra-2017-combined", "--jobs", "2",
                          "--quiet", "--json", str(tmp_path / "r.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    children = []
    while time.time() < deadline and len(children) < 2:
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p.pid)], capture_output=True, text=True).stdout
        children = [int(x) for x in out.split()]
        time.sleep(0.1)
    assert len(children) >= 2, "the pool never started"
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(1.0)
    alive = [c for c in children if os.path.exists(f"/proc/{c}") and "Z" not in open(f"/proc/{c}/stat").read().split()[2]]
    assert alive == [], f"workers outlived their parent: {alive}"
    assert b"Traceback" not in p.stderr.read()
    assert [n for n in os.listdir(tmp_path)] == []
