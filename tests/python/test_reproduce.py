"""``swaplab reproduce``: every experiment runs (scaled down) and produces every cell."""

import json
import math
import re

import pytest

from swaplab import experiments as ex
from conftest import EXPERIMENTS, run_cli

# Scale factors that make each experiment run in seconds (--scale keeps the kernel's 48 MiB
# reserve, so the 900 MiB machines of seed 003 cannot shrink beyond 14).
SCALES = {"hugh2012-hdd": 12, "vma-ra-2017-combined": 64, "vma-ra-2017-linpack": 64,
          # 5600 processes and their fixed kernel memory do not shrink: published size (~2 min).
          "hackbench2008-alone": 1, "hackbench2008-dbench": 1,
          # 256 MiB of the guest is the filled ramdisk (kernel_reserved, not scaled): published
          # size, 4 x 100 runs of a fraction of a second each (~2 min).
          "frontswap2010": 1,
          # 65 M keys at the published size; 1/64 is ~1 s. The fio workload is already 1/256.
          "mglru2022-memcached": 64, "mglru2022-fio": 4}
DEFAULT_SCALE = 8
ROW_KEYS = {"variant", "row", "metric", "published", "simulated", "published_ratio", "simulated_ratio", "verdict"}
# The published tables (experiments without published numbers, such as the host runner's, are
# not reproductions and are left out of --all).
NAMES = [p.stem for p in ex.discover(EXPERIMENTS) if ex.load(p).has_published]


def test_all_seed_tables_have_experiments():
    assert {"hugh2012-hdd", "hugh2012-ssd", "shaohua2014", "vma-ra-2017-combined", "vma-ra-2017-linpack"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_experiment_file_is_complete(name):
    e = ex.load(EXPERIMENTS / f"{name}.toml")
    assert e.name == name
    assert e.source and "seeds/" in e.source
    assert e.baseline in [v.name for v in e.variants]
    for mr in e.metric_rows:
        for v in e.variants:
            assert mr.published[v.name] is not None, (mr.label, v.name)


def _reads_stale_scan_statistics(profile: str) -> bool:
    """config::reclaim_stats_ratelimited: since 6.12 classic reclaim's scan heuristics read the
    memory cgroup statistics up to a 2 s flush period old; "6.x" is the newest era."""
    m = re.fullmatch(r"6\.(\d+)", profile)
    return int(m.group(1)) >= 12 if m else profile in ("6.x", "6", "modern")


@pytest.mark.parametrize("name", NAMES)
def test_a_variant_named_for_a_kernel_before_6_12_reads_exact_scan_statistics(name):
    """A variant that stands for a kernel release (named "5.17-rc2", ...) older than 6.12 must
    not run the 6.12+ stale statistics view: with it the memcached baseline's inactive anon
    list drained into the active list unseen and the OOM killer fired with 86% of swap free at
    1/36 of the size (docs/results/mglru-reproduce.md, session 31)."""
    e = ex.load(EXPERIMENTS / f"{name}.toml")
    default = e.workload.get("kernel", {}).get("profile", "6.x")
    for v in e.variants:
        m = re.match(r"(\d+)\.(\d+)", v.name)
        if not m or (int(m.group(1)), int(m.group(2))) >= (6, 12):
            continue
        profile = default
        for ov in e.overrides(e.metric_rows[0].row, v.name):
            key, _, val = ov.partition("=")
            if key.strip() == "kernel.profile":
                profile = val.strip().strip('"').strip("'")
        assert not _reads_stale_scan_statistics(profile), (name, v.name, profile)


@pytest.mark.parametrize("name", NAMES)
def test_reproduce_scaled_produces_every_cell(name, tmp_path):
    scale = SCALES.get(name, DEFAULT_SCALE)
    out = tmp_path / "out.json"
    proc = run_cli("reproduce", name, "--scale", scale, "--json", out, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Verdict rule:" in proc.stdout and "agrees when" in proc.stdout
    rep = json.loads(out.read_text())
    e = ex.load(EXPERIMENTS / f"{name}.toml")
    assert rep["experiment"] == name
    assert rep["scale"] == scale
    assert isinstance(rep["agrees"], bool)
    cells = {(r["row"], r["variant"]) for r in rep["rows"]}
    assert cells == {(mr.label, v.name) for mr in e.metric_rows for v in e.variants}
    for r in rep["rows"]:
        assert ROW_KEYS <= set(r), r
        assert r["published"] is not None
        assert r["simulated"] is not None and math.isfinite(r["simulated"]) and r["simulated"] >= 0, r
        assert r["verdict"] in ("agrees", "differs"), r
    base = {r["row"]: r["simulated"] for r in rep["rows"] if r["variant"] == e.baseline}
    for r in rep["rows"]:
        if base[r["row"]]:  # a ratio to a baseline of 0 is undefined (and reported as "-")
            assert r["simulated_ratio"] is not None
            if r["variant"] == e.baseline:
                assert r["simulated_ratio"] == pytest.approx(1.0)
    for sim in rep["simulations"]:
        assert sim["config"] and not sim["interrupted"]
        assert 0.0 <= sim["iowait_pct"] <= 100.0, sim["iowait_pct"]
    assert rep["swaplab_version"]
    png = out.with_suffix(".png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    # every cell is printed
    for mr in e.metric_rows:
        assert mr.label in proc.stdout


def test_reproduce_is_deterministic_and_independent_of_jobs(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run_cli("reproduce", "shaohua2014", "--scale", 8, "--jobs", 1, "--json", a, "--quiet").returncode == 0
    assert run_cli("reproduce", "shaohua2014", "--scale", 8, "--jobs", 2, "--json", b, "--quiet").returncode == 0
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ra["rows"] == rb["rows"]
    assert ra["rows"][0]["simulated"] is not None


def test_strict_exit_code_follows_the_verdicts(tmp_path):
    out = tmp_path / "s.json"
    proc = run_cli("reproduce", "shaohua2014", "--scale", 8, "--strict", "--json", out, "--quiet")
    rep = json.loads(out.read_text())
    assert proc.returncode == (0 if rep["agrees"] else 1), proc.stderr


def test_all_with_a_too_large_scale_is_a_user_error():
    proc = run_cli("reproduce", "--all", "--scale", 1000)
    assert proc.returncode == 2
    assert "use --scale" in proc.stderr and "Traceback" not in proc.stderr


def test_list():
    proc = run_cli("reproduce", "--list")
    assert proc.returncode == 0
    for n in NAMES:
        assert n in proc.stdout


CUSTOM = """
[experiment]
name = "custom"
title = "two metrics from one row"
source = "a test"
metric = ["elapsed_s", "vmstat.pswpin"]
baseline = "pc3"

[workload]
[workload.machine]
ram = "96MiB"
[[workload.swap]]
device = "sata-ssd"
size = "128MiB"
[[workload.task]]
name = "seq"
[[workload.task.mapping]]
name = "buf"
kind = "anon"
size = "64MiB"
[[workload.task.phase]]
mapping = "buf"
pattern = "sequential"
cycles = 2

[[variant]]
name = "pc3"
set = ["kernel.page_cluster=3", 'kernel.readahead="fixed"']

[[variant]]
name = "pc0"
set = ["kernel.page_cluster=0", 'kernel.readahead="fixed"']

[[row]]
name = "seq"
published = { elapsed_s = { pc3 = 1.0, pc0 = 2.0 }, "vmstat.pswpin" = { pc3 = 100, pc0 = 100 } }
"""


def test_a_row_with_a_list_of_metrics_and_an_inline_workload(tmp_path):
    exp = tmp_path / "custom.toml"
    exp.write_text(CUSTOM)
    out = tmp_path / "c.json"
    proc = run_cli("reproduce", exp, "--json", out, "--jobs", 1)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(out.read_text())
    assert [(r["row"], r["variant"]) for r in rep["rows"]] == [
        ("seq elapsed_s", "pc3"), ("seq elapsed_s", "pc0"), ("seq vmstat.pswpin", "pc3"), ("seq vmstat.pswpin", "pc0")]
    assert len(rep["simulations"]) == 2
    r = {(x["row"], x["variant"]): x for x in rep["rows"]}
    # Without readahead every swapped-out page comes back with a read of its own: no fewer
    # pages read than with an 8-page window, and not faster.
    assert r[("seq elapsed_s", "pc0")]["simulated"] >= r[("seq elapsed_s", "pc3")]["simulated"]
    assert rep["rows"][0]["published_ratio"] == 1.0 and rep["rows"][1]["published_ratio"] == 2.0


def test_a_broken_experiment_file_is_a_user_error(tmp_path):
    exp = tmp_path / "broken.toml"
    exp.write_text(CUSTOM.replace('baseline = "pc3"', 'baseline = "pc9"'))
    proc = run_cli("reproduce", exp)
    assert proc.returncode == 2
    assert "pc9" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    exp.write_text(CUSTOM.replace('metric = ["elapsed_s", "vmstat.pswpin"]', 'metric = "speed"'))
    proc = run_cli("reproduce", exp)
    assert proc.returncode == 2 and "unknown metric" in proc.stderr


def test_min_ttl_scenario_kills_with_swap_free(tmp_path):
    """scenario-mglru-min-ttl's designed outcome: a large min_ttl_ms OOM-kills a program whose
    working set is all young, long before swap fills; without it the program swaps and ends."""
    out = tmp_path / "ttl.json"
    proc = run_cli("reproduce", "scenario-mglru-min-ttl", "--json", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    cells = {(r["row"], r["variant"]): r["simulated"] for r in json.loads(out.read_text())["rows"]}
    assert cells[("grower vmstat.oom_kill", "min_ttl 0")] == 0
    assert cells[("grower vmstat.oom_kill", "min_ttl 10000")] >= 1
    assert cells[("grower vmstat.pswpout", "min_ttl 10000")] < cells[("grower vmstat.pswpout", "min_ttl 0")] / 4
