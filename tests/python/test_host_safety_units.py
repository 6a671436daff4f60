"""The host runner's safety mechanisms that need no root: the journal's cleanup, the host lock,
the signal deferral of the restore (docs/safety.md)."""

import json
import os
import signal
import subprocess
import sys

import pytest

from swaplab.host.journal import Journal, cleanup, remove_rundir, stale_journals
from swaplab.host.swapdev import check_workdir, make_workdir, temporary_workdir
from swaplab.host.lock import HostLock
from swaplab.host.signals import RunSignals


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_cleanup_keeps_a_journal_whose_undo_failed(tmp_path):
    victim = tmp_path / "swapfile"
    victim.write_text("x")
    bad = {"op": "knob", "path": str(tmp_path / "no-such-dir" / "knob"), "value": "3"}
    path = tmp_path / f"journal-{_dead_pid()}.json"
    path.write_text(json.dumps({"pid": 1, "records": [{"op": "unlink", "path": str(victim)}, bad]}))
    log = cleanup(str(tmp_path))
    assert not victim.exists(), log
    assert any(line.startswith("FAILED") and "knob" in line for line in log), log
    kept = json.loads(path.read_text())["records"]
    assert kept == [bad], "the journal must keep exactly the failed record, for a retry"
    # once the cause is fixed, a retry finishes the job and removes the journal
    (tmp_path / "no-such-dir").mkdir()
    log = cleanup(str(tmp_path))
    assert not any(line.startswith("FAILED") for line in log), log
    assert not path.exists() and (tmp_path / "no-such-dir" / "knob").read_text() == "3"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"records": [{"no-op": 1}]}', "\udcff"])
def test_cleanup_of_a_corrupt_journal_says_so_and_unblocks_later_runs(tmp_path, content):
    path = tmp_path / f"journal-{_dead_pid()}.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    assert stale_journals(str(tmp_path)) == [str(path)]
    log = cleanup(str(tmp_path))
    assert len(log) == 1 and log[0].startswith("FAILED") and "not a readable journal" in log[0], log
    assert os.path.exists(str(path) + ".corrupt") and not path.exists()
    assert stale_journals(str(tmp_path)) == [], "a corrupt journal must not block every later host run"


def test_rundir_removal_takes_only_the_runners_data_files(tmp_path):
    d = tmp_path / "swaplab-1-0.d"
    d.mkdir()
    (d / "swaplab-77-0-0-data.data").write_bytes(b"\0" * 4096)
    remove_rundir(str(d))
    assert not d.exists()
    d.mkdir()
    (d / "precious.txt").write_text("mine")
    with pytest.raises(OSError, match="did not create"):
        remove_rundir(str(d))
    assert (d / "precious.txt").read_text() == "mine"


def test_a_missing_workdir_is_created_by_the_run_and_removed_by_its_restore(tmp_path):
    workdir = tmp_path / "var" / "swaplab"
    note = check_workdir(str(workdir))
    assert not workdir.exists(), "the precondition check must not change the machine"
    assert "removed after it" in note
    journal = Journal(str(tmp_path / "journal"), persist=False)
    make_workdir(journal, str(workdir))
    assert workdir.is_dir() and [r["op"] for r in journal.records] == ["workdir", "workdir"]
    (workdir / "swaplab-1-0.d").mkdir()
    journal.push({"op": "rundir", "path": str(workdir / "swaplab-1-0.d")})
    assert journal.restore() == []
    assert not (tmp_path / "var").exists(), "every level the run created is removed"
    assert tmp_path.is_dir()


def test_a_created_workdir_holding_foreign_files_stays_and_the_restore_says_so(tmp_path):
    workdir = tmp_path / "swaplab"
    journal = Journal(str(tmp_path / "journal"), persist=False)
    make_workdir(journal, str(workdir))
    (workdir / "precious.txt").write_text("mine")
    errors = journal.restore()
    assert len(errors) == 1 and "did not create" in errors[0], errors
    assert (workdir / "precious.txt").read_text() == "mine"


def test_an_existing_workdir_is_neither_journalled_nor_removed(tmp_path):
    journal = Journal(str(tmp_path / "journal"), persist=False)
    make_workdir(journal, str(tmp_path))
    assert journal.records == []
    with temporary_workdir(str(tmp_path)):
        pass
    assert tmp_path.is_dir()


def test_the_calibrations_workdir_is_removed_on_every_exit_path(tmp_path):
    workdir = tmp_path / "a" / "b"
    with pytest.raises(RuntimeError):
        with temporary_workdir(str(workdir)):
            assert workdir.is_dir()
            raise RuntimeError("measurement failed")
    assert not (tmp_path / "a").exists()


def test_host_lock_refuses_a_second_holder_and_names_the_first(tmp_path):
    code = ("import sys; from swaplab.host.lock import HostLock\n"
            "from swaplab.host import PreconditionError\n"
            f"try:\n    HostLock({str(tmp_path)!r}).__enter__()\n"
            "except PreconditionError as e:\n    print(e); sys.exit(2)\n")
    with HostLock(str(tmp_path)):
        with HostLock(str(tmp_path)):  # re-entrant in the holder
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert r.returncode == 2 and f"pid {os.getpid()}" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, "the lock was not released"


@pytest.fixture
def own_handlers():
    """Put the test process's signal dispositions back (a leaked one would reach every child)."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def test_restore_is_not_interrupted_by_repeated_signals(own_handlers):
    done = []
    with pytest.raises(KeyboardInterrupt):
        with RunSignals() as sig:
            try:
                os.kill(os.getpid(), signal.SIGTERM)  # the first signal unwinds the run
                for _ in range(1000):
                    pass
                pytest.fail("SIGTERM did not unwind the run")
            finally:
                with sig.deferred():
                    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
                        os.kill(os.getpid(), s)
                    done.append("restored")
    assert done == ["restored"]
    # stopping: a repeated SIGTERM cannot kill, a repeated SIGINT cannot interrupt the exit
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN


def test_a_signal_during_a_normal_restore_stops_the_run_after_it(own_handlers):
    done = []
    with RunSignals() as sig:
        with pytest.raises(KeyboardInterrupt):
            with sig.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                done.append("restored")
    assert done == ["restored"]


def test_host_cli_precondition_errors_exit_2_without_traceback(tmp_path):
    wl = os.path.join(os.path.dirname(__file__), "..", "host", "small.toml")
    r = subprocess.run([sys.executable, "-m", "swaplab", "host", "run", wl, "--runs", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--runs 0" in r.stderr and "Traceback" not in r.stderr, r.stderr
