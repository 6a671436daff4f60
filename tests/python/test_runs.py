"""--runs N and experiments' runs: seeds, mean/std/min/max (issue 4)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swaplab import runs as rn
from swaplab import experiments as ex

ROOT = Path(__file__).resolve().parents[2]

SMALL = """
name = "runs-test"
seed = 4
[machine]
cpus = 2
ram = "64MiB"
kernel_reserved = "4MiB"
[[swap]]
device = "nvme"
size = "64MiB"
[[channel]]
name = "sock"
count = 2
[[task]]
name = "sender"
instances = 2
[[task.mapping]]
name = "m"
kind = "anon"
size = "256KiB"
[[task.phase]]
mapping = "m"
pattern = "random"
cycles = 2.0
[[task.phase]]
mapping = "m"
pattern = "send"
channel = "sock"
index = "zero"
fanout = 2
messages = 50
[[task]]
name = "receiver"
instances = 2
[[task.mapping]]
name = "m"
kind = "anon"
size = "16KiB"
[[task.phase]]
mapping = "m"
pattern = "recv"
channel = "sock"
messages = 100
"""


def test_aggregate_matches_the_2008_table():
    # rc6+stream column of seed 001's first table: avg 185.4109, std 74.18484 (population).
    v = [175.457, 168.409, 154.658, 46.148, 289.575, 146.871, 305.036, 225.21, 224.674, 118.071]
    a = rn.aggregate(v)
    assert a["mean"] == pytest.approx(185.4109)
    assert a["std"] == pytest.approx(74.18484, abs=1e-4)
    assert (a["min"], a["max"]) == (46.148, 305.036)
    assert rn.aggregate([None])["mean"] is None
    assert rn.split_aggregate("elapsed_s:std") == ("elapsed_s", "std")
    assert rn.split_aggregate("elapsed_s") == ("elapsed_s", "mean")


def _swaplab(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "swaplab", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_runs_uses_consecutive_seeds(tmp_path):
    w = tmp_path / "w.toml"
    w.write_text(SMALL)
    out = tmp_path / "r.json"
    p = _swaplab("run", str(w), "--runs", "3", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert "3 runs, seeds 4..6" in p.stdout
    assert "elapsed_s" in p.stdout
    d = json.loads(out.read_text())
    assert d["seeds"] == [4, 5, 6]
    assert [r["seed"] for r in d["results"]] == [4, 5, 6]
    s = d["summary"]["elapsed_s"]
    assert s["min"] <= s["mean"] <= s["max"]
    assert len(s["values"]) == 3


def test_cli_runs_rejects_zero(tmp_path):
    w = tmp_path / "w.toml"
    w.write_text(SMALL)
    p = _swaplab("run", str(w), "--runs", "0")
    assert p.returncode == 2
    assert "--runs" in p.stderr


def test_experiment_runs_field_and_aggregate_rows():
    e = ex.load(ROOT / "experiments" / "hackbench2008-alone.toml")
    assert e.runs == 10
    metrics = [mr.metric for mr in e.metric_rows]
    assert "elapsed_s:std" in metrics and "elapsed_s:max" in metrics


def test_reproduce_aggregates_runs(tmp_path):
    from swaplab.reproduce import reproduce

    exp = tmp_path / "e.toml"
    doc = "[experiment]\nname = \"e\"\nruns = 3\nmetric = \"elapsed_s\"\n[workload]\n" + SMALL.replace("\n[", "\n[workload.").replace("[workload.[", "[[workload.")
    doc = doc.replace('[workload]\n\nname = "runs-test"', '[workload]\nname = "runs-test"')
    doc += '\n[[variant]]\nname = "a"\n[[variant]]\nname = "b"\nset = ["costs.msg_send_ns=3000"]\n'
    doc += '[[row]]\nname = "avg"\npublished = { a = 1.0, b = 1.5 }\n[[row]]\nname = "max"\nmetric = "elapsed_s:max"\n'
    exp.write_text(doc)
    e = ex.load(exp)
    rep = reproduce([e], n_jobs=1, show_progress=False)[0]
    assert rep["runs"] == 3
    assert len(rep["simulations"]) == 6
    assert sorted({s["seed"] for s in rep["simulations"]}) == [4, 5, 6]
    row = rep["rows"][0]
    for k in ("published", "simulated", "published_ratio", "simulated_ratio", "verdict"):
        assert k in row
    assert row["simulated_min"] <= row["simulated"] <= row["simulated_max"]
    assert row["simulated_std"] >= 0
