"""swaplab sweep: a grid runs into a results store once; rerun, interrupted, on Ray, with a bad
point — the store stays exact and the table says what ran."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, SMALL, run_cli

import swaplab
from swaplab.store import Store

GRID = """\
workload = "{workload}"
name = "{name}"
[axes]
kernel.swappiness = [0, 100]
"kernel.page_cluster" = [0, 2, 3]
seeds = [1, 2]
"""

# ~0.2 s a point: long enough to stop a sweep halfway through.
SLOW = (SMALL.replace('"96MiB"', '"160MiB"').replace('"64MiB"', '"200MiB"')
        .replace('pattern = "sequential"\ncycles = 2', 'pattern = "random"\ncycles = 30'))


def _grid(tmp_path, workload_text=SMALL, name="g", grid=GRID, **fmt):
    w = tmp_path / f"{name}-workload.toml"
    w.write_text(workload_text)
    g = tmp_path / f"{name}.toml"
    g.write_text(grid.format(workload=w, name=name, **fmt))
    return g


def _sweep(grid, store, *extra, timeout=600):
    proc = run_cli("sweep", grid, "--out", store, "--json", *extra, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def _records(store):
    """Every record on disk, parsed (a partial file would fail here)."""
    s = Store(store)
    out = {}
    for key in s.keys():
        rec = s.get(key)
        assert rec["key"] == key
        out[key] = rec
    return out


def test_twelve_points_twice_run_twelve_then_none(tmp_path):
    grid, store = _grid(tmp_path), tmp_path / "store"
    first = _sweep(grid, store, "--jobs", "2")
    assert (first["points"], first["ran"], first["cached"], first["failed"]) == (12, 12, 0, 0)
    recs = _records(store)
    assert len(recs) == 12 and all(r["status"] == "ok" for r in recs.values())
    mtimes = {k: Store(store).path_of(k).stat().st_mtime_ns for k in recs}
    second = _sweep(grid, store, "--jobs", "2")
    assert (second["points"], second["ran"], second["cached"], second["failed"]) == (12, 0, 12, 0)
    assert {k: Store(store).path_of(k).stat().st_mtime_ns for k in recs} == mtimes  # nothing rewritten

    df = swaplab.load_results(store, sweep="g")
    assert len(df) == 12 and df["key"].is_unique
    assert sorted(set(df["kernel_page_cluster"])) == [0, 2, 3] and sorted(set(df["seed"])) == [1, 2]
    # The table's figures are the records' figures, and every result embeds its configuration.
    for _, row in df.iterrows():
        raw = recs[row["key"]]["result"]
        assert raw["config"]["kernel"]["page_cluster"] == row["kernel_page_cluster"]
        assert raw["config"]["seed"] == row["seed"]
        assert row["pswpin"] == raw["vmstat"]["pswpin"]
        assert raw["swaplab_version"] == swaplab.__version__
    # Readahead off (page_cluster 0) must read more pages in one by one than with clusters.
    by_pc = df.groupby("kernel_page_cluster")["pgmajfault"].mean()
    assert by_pc[0] > by_pc[3]


def test_a_torn_record_is_run_again(tmp_path):
    """Records are not fsynced one by one: one torn by a power loss must count as missing."""
    grid, store = _grid(tmp_path), tmp_path / "store"
    _sweep(grid, store)
    s = Store(store)
    key = sorted(s.keys())[3]
    before = s.get(key)["result"]
    whole = s.path_of(key).read_bytes()
    s.path_of(key).write_bytes(whole[: len(whole) // 2])
    assert s.status(key) is None and s.get(key) is None
    again = _sweep(grid, store)
    assert (again["ran"], again["cached"]) == (1, 11)
    assert s.get(key)["result"] == before      # the same result again: deterministic


def test_results_query_with_duckdb(tmp_path):
    grid, store = _grid(tmp_path), tmp_path / "store"
    _sweep(grid, store)
    proc = run_cli("results", "query", "--store", store, "--format", "json",
                   "SELECT kernel_page_cluster AS pc, count(*) AS n, avg(pswpin) AS pswpin "
                   "FROM results GROUP BY pc ORDER BY pc")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["pc"] for r in rows] == [0, 2, 3] and all(r["n"] == 4 for r in rows)
    df = swaplab.load_results(store)
    for r in rows:
        assert r["pswpin"] == pytest.approx(df[df["kernel_page_cluster"] == r["pc"]]["pswpin"].mean())
    bad = run_cli("results", "query", "--store", store, "SELECT nope FROM results")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nope" in bad.stderr


def test_identical_points_run_once(tmp_path):
    # swappiness 60 is the default: the axis value "60" and the file's own value are one point.
    grid = _grid(tmp_path, grid='workload = "{workload}"\nname = "{name}"\n[axes]\n'
                                 'kernel.swappiness = [60, 60, 10]\n')
    summary = _sweep(grid, tmp_path / "store")
    assert (summary["points"], summary["ran"], summary["shared"]) == (3, 2, 1)
    assert len(_records(tmp_path / "store")) == 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_interrupted_sweep_resumes_without_duplicates(tmp_path, sig):
    grid = _grid(tmp_path, SLOW, grid='workload = "{workload}"\nname = "{name}"\n[axes]\n'
                                      'kernel.swappiness = [0, 30, 60, 100]\nkernel.page_cluster = [0, 1, 2, 3]\n')
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "swaplab", "sweep", str(grid), "--out", str(store), "--jobs", "2"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        n = len(list(store.glob("points/*/*.json"))) if store.is_dir() else 0
        if n >= 5:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("the sweep did not get going within 120 s")
    if sig == signal.SIGINT:
        os.kill(proc.pid, signal.SIGINT)        # Ctrl-C: the sweep's own process
    else:
        os.killpg(proc.pid, signal.SIGKILL)     # a crash: the sweep and its workers at once
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL), stderr
    assert "Traceback" not in stderr

    done = _records(store)                        # every record on disk is complete
    # the table reflects what finished, even when the sweep had no time to rebuild it
    assert set(swaplab.load_results(store)["key"]) == set(done)
    assert 5 <= len(done) < 16, len(done)
    assert all(r["status"] == "ok" for r in done.values())
    resumed = _sweep(grid, store, "--jobs", "2")
    assert resumed["points"] == 16 and resumed["failed"] == 0
    assert resumed["cached"] == len(done) and resumed["ran"] == 16 - len(done)
    after = _records(store)
    assert len(after) == 16
    assert all(after[k] == v for k, v in done.items())   # what was kept was not run again
    df = swaplab.load_results(store)
    assert len(df) == 16 and df["key"].is_unique and set(df["point"]) == set(range(16))


def test_bad_point_is_reported_and_the_others_complete(tmp_path):
    grid = _grid(tmp_path, grid='workload = "{workload}"\nname = "{name}"\n[axes]\n'
                                'kernel.readahead = ["fixed", "smart", "none"]\nkernel.page_cluster = [0, 3]\n')
    store = tmp_path / "store"
    summary = _sweep(grid, store)
    assert (summary["points"], summary["ran"], summary["failed"]) == (6, 4, 2)
    assert {f["axes"]["kernel.readahead"] for f in summary["failures"]} == {"smart"}
    assert all("kernel.readahead" in f["error"] and "smart" in f["error"] for f in summary["failures"])
    df = swaplab.load_results(store)
    failed = df[df["status"] == "failed"]
    assert len(failed) == 2 and failed["error"].str.contains("smart").all()
    assert df[df["status"] == "ok"]["elapsed_s"].notna().sum() == 4
    # the human summary names the failed points
    proc = run_cli("sweep", grid, "--out", store)
    assert proc.returncode == 0 and "failed: point 2 (kernel.readahead=smart" in proc.stdout, proc.stdout
    assert run_cli("sweep", grid, "--out", store, "--strict").returncode == 1


def test_ray_local_cluster_gives_the_local_table(tmp_path):
    grid = _grid(tmp_path, grid='workload = "{workload}"\nname = "{name}"\n[axes]\n'
                                'kernel.page_cluster = [0, 3]\nseeds = [1, 2, 3]\n')
    local, ray = tmp_path / "local", tmp_path / "ray"
    a = _sweep(grid, local, "--jobs", "2")
    b = _sweep(grid, ray, "--engine", "ray", "--jobs", "2", timeout=300)
    assert (a["ran"], b["ran"], b["failed"], b["engine"]) == (6, 6, 0, "ray")
    ta = swaplab.load_results(local).drop(columns=["wall_s", "cpu_s"]).sort_values("point").reset_index(drop=True)
    tb = swaplab.load_results(ray).drop(columns=["wall_s", "cpu_s"]).sort_values("point").reset_index(drop=True)
    assert ta.equals(tb)
    ra, rb = _records(local), _records(ray)
    assert ra.keys() == rb.keys()
    assert all(ra[k]["result"] == rb[k]["result"] for k in ra)   # bit-identical results


def test_experiment_grid_sweeps_cells(tmp_path):
    g = tmp_path / "exp.toml"
    g.write_text(f'workload = "{ROOT / "experiments" / "hugh2012-ssd.toml"}"\nscale = 16\n'
                 '[axes]\nrow = ["Seq Anon", "Rand Anon"]\nvariant = ["Vanilla", "HughPC0"]\n')
    summary = _sweep(g, tmp_path / "store")
    assert (summary["points"], summary["ran"]) == (4, 4)
    df = swaplab.load_results(tmp_path / "store")
    seq = df[df["row"] == "Seq Anon"].set_index("variant")["elapsed_s"]
    assert seq["HughPC0"] > 1.5 * seq["Vanilla"]   # no readahead: sequential swap-in much slower


GRID_MISTAKES = {
    "no workload": ("[axes]\nkernel.swappiness = [1]\n", ["g.toml", "workload"]),
    "missing workload file": ('workload = "nope.toml"\n', ["g.toml", "nope.toml"]),
    "axis not a list": ('workload = "{w}"\n[axes]\nkernel.swappiness = 5\n', ["g.toml", "kernel.swappiness", "list"]),
    "seeds and runs": ('workload = "{w}"\n[axes]\nseeds = [1]\nruns = 2\n', ["g.toml", "seeds", "runs"]),
    "unknown key": ('workload = "{w}"\naxis = 1\n', ["g.toml", "axis"]),
    "row without experiment": ('workload = "{w}"\n[axes]\nrow = ["x"]\n', ["g.toml", "row"]),
}


@pytest.mark.parametrize("case", sorted(GRID_MISTAKES))
def test_grid_mistakes_exit_2_with_one_line(tmp_path, case):
    text, needles = GRID_MISTAKES[case]
    w = tmp_path / "w.toml"
    w.write_text(SMALL)
    g = tmp_path / "g.toml"
    g.write_text(text.format(w=w))
    proc = run_cli("sweep", g, "--out", tmp_path / "store")
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("swaplab: error: ") and "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)
