"""What a new user meets first: an experiment file given to `run`, `bench --json OUT`,
`reproduce --help`, and keeping a run's result in the store."""

import json

import swaplab
from conftest import ROOT, run_cli
from swaplab.store import Store, result_key

EXPERIMENT = ROOT / "experiments" / "hugh2012-ssd.toml"


def test_run_on_an_experiment_runs_its_baseline_of_every_row(tmp_path):
    out = tmp_path / "runs.json"
    proc = run_cli("run", EXPERIMENT, "--set", "machine.ram=112MiB", "--set", "task.0.mapping.0.size=125MiB",
                   "--set", "swap.0.size=128MiB", "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "unknown field" not in proc.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "experiment-runs" and doc["experiment"] == "hugh2012-ssd"
    assert [(r["row"], r["variant"]) for r in doc["runs"]] == [
        ("Seq Anon", "Vanilla"), ("Seq Shmem", "Vanilla"), ("Rand Anon", "Vanilla"), ("Rand Shmem", "Vanilla")]
    for r in doc["runs"]:
        cfg = r["result"]["config"]
        assert cfg["kernel"]["readahead"] == "fixed" and cfg["machine"]["ram"] == 112 << 20
    assert proc.stdout.count("== hugh2012-ssd: row") == 4
    page = tmp_path / "runs.html"
    assert run_cli("report", out, "-o", page).returncode == 0
    assert page.read_text().count("<h2>Rand Anon / Vanilla</h2>") == 1


def test_run_on_an_experiment_with_all_variants(tmp_path):
    out = tmp_path / "one.json"
    proc = run_cli("run", EXPERIMENT, "--all-variants", "--quiet", "--json", out,
                   "--set", "machine.ram=112MiB", "--set", "task.0.mapping.0.size=125MiB", "--set", "swap.0.size=128MiB")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 16 and {r["variant"] for r in doc["runs"]} == {"Vanilla", "HughNew", "HughPC4", "HughPC0"}


def test_all_variants_on_a_workload_is_a_user_error():
    proc = run_cli("run", ROOT / "examples" / "quick.toml", "--all-variants")
    assert proc.returncode == 2 and "experiment" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bench_json_to_a_file_and_to_stdout(tmp_path):
    out = tmp_path / "bench.json"
    proc = run_cli("bench", "--quick", "--json", out, timeout=900)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert json.loads(out.read_text())["resident_touches_per_s"] > 0


def test_reproduce_help_says_it_takes_a_path():
    proc = run_cli("reproduce", "--help")
    assert proc.returncode == 0 and "path" in proc.stdout.lower()


def test_results_add_keeps_a_run_in_the_store(tmp_path):
    res = tmp_path / "run.json"
    assert run_cli("run", ROOT / "examples" / "quick.toml", "--json", res, "--quiet").returncode == 0
    store = tmp_path / "store"
    proc = run_cli("results", "add", res, "--store", store)
    assert proc.returncode == 0, proc.stderr
    raw = json.loads(res.read_text())
    key = result_key(raw["config"], raw["swaplab_version"], "simulation")
    assert Store(store).get(key)["result"] == raw
    df = swaplab.load_results(store)
    assert list(df["key"]) == [key] and df["sweep"].isna().all() and df["pswpin"][0] == raw["vmstat"]["pswpin"]
    # the same configuration swept later is found in the store, not run again
    grid = tmp_path / "g.toml"
    grid.write_text(f'workload = "{ROOT / "examples" / "quick.toml"}"\n[axes]\nseeds = [1]\n')
    proc = run_cli("sweep", grid, "--out", store, "--json")
    assert proc.returncode == 0, proc.stderr
    assert (json.loads(proc.stdout)["cached"], json.loads(proc.stdout)["ran"]) == (1, 0)
    page = tmp_path / "rec.html"
    assert run_cli("report", Store(store).path_of(key), "-o", page).returncode == 0
    assert "LRU list sizes" in page.read_text()


def test_report_refuses_what_it_cannot_draw_in_one_line(tmp_path):
    notjson = tmp_path / "x.json"
    notjson.write_text("{ not json")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    for path, needle in ((tmp_path / "nope.json", "no such file"), (notjson, "not a JSON result"),
                         (other, "not a result swaplab can report on"), (tmp_path, "not a results store")):
        proc = run_cli("report", path, "-o", tmp_path / "r.html")
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr
        assert not (tmp_path / "r.html").exists()
