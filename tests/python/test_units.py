"""The lab's own logic: scaling, metrics, verdicts, TOML writing (pure Python, no model)."""

import sys

import pytest

from swaplab import metrics, tomlio
from swaplab.experiments import verdict
from swaplab.scale import scale_override, scale_workload
from swaplab.units import parse_duration, parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def test_units():
    assert parse_size("900MiB") == 900 << 20
    assert parse_size("1GB") == 10**9
    assert parse_size("12.5GiB") == int(12.5 * (1 << 30))
    assert parse_size("10 pages") == 40960
    assert parse_size(4096) == 4096
    assert parse_duration("300s") == 300 * 10**9
    assert parse_duration("90us") == 90_000
    with pytest.raises(ValueError):
        parse_size("5 furlongs")


def test_scale_workload_divides_sizes_and_durations_but_not_the_reserve():
    doc = {
        "machine": {"ram": "900MiB", "kernel_reserved": "48MiB", "cpus": 2, "memcg_limit": "512MiB"},
        "kernel": {"page_cluster": 3},
        "sim": {"time_limit": "300s", "sample_interval": "100ms"},
        "swap": [{"device": "hdd", "size": "1GiB", "params": {"read_latency_ns": 100}}],
        "task": [{"name": "t", "time_limit": "300s", "start_delay": "1s",
                  "mapping": [{"name": "m", "kind": "anon", "size": "1000MiB"}],
                  "phase": [{"mapping": "m", "pattern": "random", "touches": 1000, "cycles": 5, "compute": "1us"}]}],
    }
    s = scale_workload(doc, 10)
    assert s["machine"]["ram"] == 90 << 20
    assert s["machine"]["memcg_limit"] == (512 << 20) // 10 // 4096 * 4096
    assert s["machine"]["kernel_reserved"] == "48MiB"
    assert s["machine"]["cpus"] == 2
    assert s["kernel"] == {"page_cluster": 3}
    assert s["sim"] == {"time_limit": 30 * 10**9, "sample_interval": "100ms"}
    assert s["swap"][0]["size"] == (1 << 30) // 10 // 4096 * 4096
    assert s["swap"][0]["params"] == {"read_latency_ns": 100}
    t = s["task"][0]
    assert t["time_limit"] == 30 * 10**9 and t["start_delay"] == 10**8
    assert t["mapping"][0]["size"] == 100 << 20
    assert t["phase"][0]["touches"] == 100 and t["phase"][0]["cycles"] == 5 and t["phase"][0]["compute"] == "1us"
    assert doc["machine"]["ram"] == "900MiB"  # not modified in place
    assert scale_workload(doc, 1) == doc


def test_scale_override():
    assert scale_override('task.0.mapping.0.size="1000MiB"', 10) == "task.0.mapping.0.size=104857600"
    assert scale_override("machine.ram=900MiB", 10) == f"machine.ram={90 << 20}"
    assert scale_override('kernel.readahead="fixed"', 10) == 'kernel.readahead="fixed"'
    assert scale_override("swap.0.params.size=5", 10) == "swap.0.params.size=5"
    assert scale_override("task.0.time_limit=\"300s\"", 100) == f"task.0.time_limit={3 * 10**9}"


@pytest.mark.parametrize("p,s,v", [
    (1.0, 1.0, "agrees"),
    (0.60, 0.70, "agrees"),      # -40% vs -30%: same sign, 0.75 of the effect
    (0.60, 0.85, "differs"),     # -40% vs -15%: less than half the effect
    (0.60, 1.10, "differs"),     # opposite sign
    (1.02, 0.97, "agrees"),      # both within +-5%
    (1.04, 1.12, "differs"),     # 3x the (small) effect
    (2.84, 2.0, "agrees"),       # +184% vs +100%
    (1.20, 1.45, "differs"),     # +20% vs +45%: more than twice
    (None, 1.0, "n/a"),
    (0.5, None, "differs"),
])
def test_verdict_rule(p, s, v):
    assert verdict(p, s) == v


def _task(name, touches, elapsed_s, mean, p90, fault=None):
    lat = {"mean": mean, "p50": mean / 2, "p90": p90, "p99": p90 * 2, "p99.9": p90 * 3, "max": p90 * 4}
    return {"name": name, "instance": 0, "touches": touches, "elapsed_ns": int(elapsed_s * 1e9),
            "minor_faults": touches // 2, "major_faults": touches // 4,
            "throughput_bytes_per_s": touches * 4096 / elapsed_s, "touch_latency_ns": lat,
            "fault_latency_ns": fault or lat}


def test_metrics_extraction():
    raw = {"vmstat": {"swap_ra": 200, "swap_ra_hit": 150},
           "tasks": [_task("seq", 1000, 2.0, 1000, 5000), _task("seq", 3000, 4.0, 2000, 9000),
                     _task("rand", 500, 5.0, 100, 100)]}
    assert metrics.extract(raw, "elapsed_s") == 5.0
    assert metrics.extract(raw, "elapsed_cs", "seq") == 400.0
    assert metrics.extract(raw, "throughput_kbps", "seq") == pytest.approx((1000 * 4096 / 2 + 3000 * 4096 / 4) / 1024)
    assert metrics.extract(raw, "latency_mean_us", "seq") == pytest.approx((1000 * 1 + 3000 * 2) / 4000)
    assert metrics.extract(raw, "latency_p90_us", ["seq"]) == pytest.approx((1000 * 5 + 3000 * 9) / 4000)
    assert metrics.extract(raw, "latency_max_us", "seq") == pytest.approx(36.0)
    assert metrics.extract(raw, "ra_hit_pct") == 75.0
    assert metrics.extract(raw, "vmstat.swap_ra") == 200.0
    assert metrics.extract(raw, "elapsed_s", "nothing*") is None
    assert metrics.extract({"vmstat": {"swap_ra": 0}, "tasks": []}, "ra_hit_pct") is None
    with pytest.raises(metrics.MetricError):
        metrics.extract(raw, "speed")


def test_toml_writer_round_trips_and_uses_array_tables():
    doc = {"name": "x", "machine": {"ram": "1GiB", "cpus": 2},
           "swap": [{"device": "nvme", "size": 5, "params": {"parallelism": 4}}],
           "task": [{"name": "t", "mapping": [{"name": "m", "kind": "anon", "size": "1MiB"}],
                     "phase": [{"mapping": "m", "pattern": "random", "cycles": 1.5, "backward": True}]}],
           "list": [1, 2, 3], "weird key": "a \"quoted\" value"}
    text = tomlio.dumps(doc)
    assert "[[task.phase]]" in text and "[[swap]]" in text and "[swap.params]" in text
    assert tomllib.loads(text) == doc
    assert tomlio.value(True) == "true" and tomlio.value("3.14") == '"3.14"'
    assert tomlio.value({"a": 1}) == "{ a = 1 }"


def test_scale_shrinks_an_hpl_matrix_order_by_the_square_root():
    # The matrix holds n^2 doubles: a 16x smaller machine gets a 4x smaller order.
    doc = {"task": [{"phase": [{"pattern": "hpl", "n": 69120, "nb": 192}]}]}
    ph = scale_workload(doc, 16)["task"][0]["phase"][0]
    assert ph["n"] == 17280 and ph["nb"] == 192
    assert scale_override("task.0.phase.0.n=40000", 4) == "task.0.phase.0.n=20000"
