"""The Python API runs the real model and returns its result with pandas views."""

import json
import math
import sys

import pandas as pd
import pytest

import swaplab
from conftest import EXAMPLES, SMALL

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PAGES = 64 * 256  # the 64 MiB mapping of SMALL


@pytest.fixture(scope="module")
def small_result(tmp_path_factory):
    p = tmp_path_factory.mktemp("api") / "small.toml"
    p.write_text(SMALL)
    return swaplab.simulate(p)


def test_simulate_returns_dataframes(small_result):
    r = small_result
    assert isinstance(r, swaplab.Result)
    assert isinstance(r.tasks, pd.DataFrame) and isinstance(r.timeseries, pd.DataFrame)
    for col in ("name", "elapsed_s", "touches", "major_faults", "touch_p50", "touch_p99_9", "fault_mean",
                "fault_p99", "fault_max", "direct_reclaim_stall_ns"):
        assert col in r.tasks.columns, col
    for col in ("t_ns", "t_s", "nr_free_pages", "swap_used_pages", "pswpin", "pswpout", "ra_hit_rate"):
        assert col in r.timeseries.columns, col
    assert isinstance(r.vmstat, dict) and "pswpout" in r.vmstat


def test_model_semantics_of_a_small_overcommitted_run(small_result):
    r = small_result
    assert not r.interrupted
    assert list(r.tasks["name"]) == ["seq"]
    t = r.tasks.iloc[0]
    # Two sequential passes over 16384 pages: exactly that many touches.
    assert t["touches"] == 2 * PAGES
    # 64 MiB does not fit in the 48 MiB left after the kernel's reserve: it must swap, and the
    # second pass must fault pages back in.
    assert r.vmstat["pswpout"] > 0
    assert r.vmstat["pgmajfault"] > 0 and t["major_faults"] > 0
    assert r.vmstat["pgfault"] >= PAGES
    assert t["elapsed_s"] > 0 and r.elapsed_s >= t["elapsed_s"] - 1e-9
    assert t["touch_p50"] <= t["touch_p99"] <= t["touch_max"]
    assert t["fault_p50"] <= t["fault_p99"] <= t["fault_max"]
    ts = r.timeseries
    assert len(ts) >= 1
    assert ts["t_ns"].is_monotonic_increasing
    assert ts["pswpout"].is_monotonic_increasing


def test_ra_hit_pct_matches_counters(small_result):
    vm = small_result.vmstat
    if vm["swap_ra"]:
        assert small_result.ra_hit_pct == pytest.approx(100 * vm["swap_ra_hit"] / vm["swap_ra"])
    else:
        assert small_result.ra_hit_pct is None


def test_result_embeds_config_and_version(small_result):
    raw = small_result.raw
    assert raw["schema"] == 1
    assert raw["swaplab_version"] == swaplab.__version__
    assert raw["config"]["machine"]["ram"] == 96 << 20
    assert raw["config"]["task"][0]["mapping"][0]["size"] == 64 << 20
    assert json.loads(small_result.to_json()) == raw


def test_dict_and_file_give_the_same_result(small_result):
    r = swaplab.simulate(tomllib.loads(SMALL))
    assert r.raw == small_result.raw


def test_keyword_overrides_use_double_underscore(small_toml):
    r = swaplab.simulate(small_toml, kernel__page_cluster=0, kernel__readahead="fixed")
    assert r.config["kernel"]["page_cluster"] == 0
    assert r.config["kernel"]["readahead"] == "fixed"
    # A fixed window of 2^0 = 1 page reads nothing ahead.
    assert r.vmstat["swap_ra"] == 0
    assert r.vmstat["pswpin"] > 0


def test_overrides_list_and_dict(small_toml):
    a = swaplab.simulate(small_toml, ["kernel.swappiness=100"])
    b = swaplab.simulate(small_toml, {"kernel.swappiness": 100})
    assert a.config["kernel"]["swappiness"] == 100
    assert a.raw == b.raw


def test_config_error_is_raised_with_location(small_toml):
    with pytest.raises(swaplab.ConfigError) as e:
        swaplab.simulate(small_toml, kernel__readahead="smart")
    assert "kernel.readahead" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_dict_that_is_not_toml_is_a_config_error():
    with pytest.raises(swaplab.ConfigError):
        swaplab.simulate({"machine": {"ram": None}})


def test_resolve_returns_the_resolved_config(small_toml):
    cfg = swaplab.resolve(small_toml)
    assert cfg["machine"]["ram"] == 96 << 20
    assert cfg["swap_devices"][0]["name"].startswith("swap0")


def test_progress_callback_can_stop_a_run(small_toml):
    calls = []

    def progress(virtual_ns, fraction):
        calls.append((virtual_ns, fraction))
        return False

    r = swaplab.simulate(small_toml, progress=progress)
    # Either the run finished before the first report, or it stopped at the first one.
    if calls:
        assert r.interrupted
        assert 0.0 <= calls[0][1] <= 1.0


def test_quick_example_runs_under_a_second_of_virtual_time_and_finishes():
    r = swaplab.simulate(EXAMPLES / "quick.toml")
    assert not r.interrupted
    assert sorted(r.tasks["name"]) == ["reader", "writer"]
    assert all(not math.isnan(x) for x in r.tasks["elapsed_s"])
    writer = r.tasks[r.tasks["name"] == "writer"].iloc[0]
    assert writer["touches"] == 2 * 128 * 256


def test_reclaim_cpu_profile_is_in_the_json_the_metrics_and_the_table(small_result):
    from swaplab import metrics
    from swaplab.table import run_report

    raw = small_result.raw
    by = raw["kswapd_cpu_by_category"]
    assert tuple(by) == metrics.CPU_CATEGORIES, "the Python list follows the core's categories"
    assert tuple(raw["direct_reclaim_cpu_by_category"]) == metrics.CPU_CATEGORIES
    total = sum(by.values())
    assert total > 0 and by["rmap_walk"] > 0 and all(by[k] > 0 for k in ("blk_bio_alloc", "blk_plug_merge", "blk_request_alloc", "blk_dispatch", "blk_completion"))  # SSD swap-out under pressure
    assert metrics.extract(raw, "kswapd_cpu_ms.total") == total / 1e6
    shares = [metrics.extract(raw, f"kswapd_cpu_pct.{c}") for c in metrics.CPU_CATEGORIES]
    assert abs(sum(shares) - 100.0) < 1e-9
    assert metrics.unit_of("kswapd_cpu_pct.rmap_walk") == "%"
    with pytest.raises(metrics.MetricError):
        metrics.check("kswapd_cpu_pct.rmap")
    text = run_report(raw)
    assert "reclaim CPU by category" in text
    row = next(line for line in text.splitlines() if line.split()[:1] == ["rmap_walk"])
    assert f"{100.0 * by['rmap_walk'] / total:.1f}%" in row


KV_STORE = """\
name = "kv"
[machine]
cpus = 2
ram = "96MiB"
[[task]]
name = "memcached"
instances = 2
[[task.mapping]]
name = "slabs"
kind = "anon"
[[task.phase]]
mapping = "slabs"
pattern = "kv-set"
keys = 4000
value_size = 2000
measure = false
[[task.phase]]
mapping = "slabs"
pattern = "kv-get"
keys = 4000
value_size = 2000
pipeline = 4
"""


def test_requests_are_in_the_json_the_metrics_and_the_task_rows(tmp_path):
    from swaplab import metrics
    p = tmp_path / "kv.toml"
    p.write_text(KV_STORE)
    r = swaplab.simulate(p)
    reqs = [t["requests"] for t in r.raw["tasks"]]
    # memtier's -n allkeys for R:R gets: key_maximum - key_minimum = 3,999 per client.
    assert [q["ops"] for q in reqs] == [3999, 3999], "each server thread answers its client's gets"
    assert metrics.extract(r.raw, "ops_per_s") == pytest.approx(sum(q["ops_per_s"] for q in reqs))
    assert metrics.extract(r.raw, "op_kb_per_s") == pytest.approx(sum(q["bytes_per_s"] for q in reqs) / 1024)
    assert metrics.extract(r.raw, "op_latency_p50_us") == pytest.approx(sum(q["latency_ns"]["p50"] for q in reqs) / 2 / 1000)
    assert metrics.unit_of("ops_per_s") == "ops/s"
    mean_window_s = sum(q["window_ns"] for q in reqs) / 2 / 1e9
    assert metrics.extract(r.raw, "memtier_ops_per_s") == pytest.approx(7998 / mean_window_s)
    assert list(r.tasks["requests_ops"]) == [3999, 3999] and "request_p99" in r.tasks.columns
    # The slab mapping was sized by the resolver: 2000 items of 2320 bytes, 451 per 1 MiB slab page.
    assert r.raw["config"]["task"][0]["mapping"][0]["size"] == 5 << 20
    from swaplab.table import run_report
    table = run_report(r.raw)
    assert "requests" in table and "memcached#1  3,999" in table, table


def test_memtier_ops_per_s_divides_all_requests_by_the_mean_thread_window():
    """memtier averages its threads' start and end times (run_stats::merge): a thread that runs
    three times as long does not add its own rate, it lengthens the one duration."""
    from swaplab import metrics
    raw = {"tasks": [{"name": "kv", "requests": {"ops": 100, "bytes": 1024 * 100, "window_ns": 1_000_000_000, "ops_per_s": 100.0}},
                     {"name": "kv", "requests": {"ops": 100, "bytes": 1024 * 100, "window_ns": 3_000_000_000, "ops_per_s": 100 / 3}}]}
    assert metrics.extract(raw, "ops_per_s") == pytest.approx(133.333, rel=1e-4), "the sum of the per-thread rates"
    assert metrics.extract(raw, "memtier_ops_per_s") == pytest.approx(100.0), "200 requests over a mean window of 2 s"
    assert metrics.extract(raw, "memtier_kb_per_s") == pytest.approx(100.0)
    assert metrics.unit_of("memtier_kb_per_s") == "KB/s"
