"""``swaplab compare --zswap`` without touching the machine: the host's zswap parameters become
the simulation's overrides, the simulation reports the pool as the host reads it (before the
tasks exit), and the comparison has a row per zswap counter."""

import json

from swaplab import _core
from swaplab.host import zswap
from swaplab.host.compare import compare_results

GIB = 1 << 30
PARAMS = {"enabled": "N", "compressor": "zstd", "max_pool_percent": "20", "accept_threshold_percent": "90",
          "shrinker_enabled": "N", "zpool": "zsmalloc"}


def test_the_pool_limit_is_the_hosts_in_pages_expressed_in_the_simulated_ram():
    # 20 % of a 24 GiB host is 4.8 GiB: more than a 1 GiB machine has, so 100 %.
    assert "zswap.max_pool_percent=100" in zswap.sim_overrides(PARAMS, 1 * GIB, 24 * GIB, "6.18.1")
    # The same RAM on both sides: the same percentage.
    assert "zswap.max_pool_percent=20" in zswap.sim_overrides(PARAMS, 24 * GIB, 24 * GIB, "6.18.1")
    # 20 % of 8 GiB in 64 GiB: 2.5 % rounds up to 3.
    assert "zswap.max_pool_percent=3" in zswap.sim_overrides(PARAMS, 64 * GIB, 8 * GIB, "6.18.1")


def test_compressor_threshold_and_kernel_era_follow_the_host():
    ov = zswap.sim_overrides(PARAMS, GIB, GIB, "6.18.44-fc")
    assert 'zswap.compressor="zstd"' in ov and "zswap.accept_threshold_percent=90" in ov
    assert "zswap.store_incompressible=true" in ov
    assert "zswap.store_incompressible=false" in zswap.sim_overrides(PARAMS, GIB, GIB, "6.17.9")
    assert zswap.notes(PARAMS) == []
    # The memory-pressure shrinker as the host has it.
    assert "zswap.shrinker_enabled=false" in ov
    assert "zswap.shrinker_enabled=true" in zswap.sim_overrides({**PARAMS, "shrinker_enabled": "Y"}, GIB, GIB, "6.18.1")


def _simulate(extra):
    text = open("experiments/workloads/host-zswap.toml").read()
    ov = ['task.0.mapping.0.size="96MiB"', 'machine.memcg_limit="64MiB"'] + extra
    return json.loads(_core.simulate(text, "experiments/workloads/host-zswap.toml", ov))


def test_the_simulation_reports_the_pool_before_the_tasks_exit_and_v1_does_not_charge_it():
    base = zswap.sim_overrides(PARAMS, 24 * GIB, 24 * GIB, "6.18.1")
    v2 = _simulate(base + ["machine.cgroup_version=2"])
    v1 = _simulate(base + ["machine.cgroup_version=1"])
    for r in (v1, v2):
        at_end = r["store"]["debugfs_at_work_end"]
        assert at_end["stored_pages"] > 0 and r["store"]["debugfs"]["stored_pages"] == 0
    # On v1 the pool grows outside the limit: more of the workload stays resident, less is
    # stored, and the pool never takes the group's memory.
    assert v1["store"]["debugfs_at_work_end"]["stored_pages"] < v2["store"]["debugfs_at_work_end"]["stored_pages"]
    assert v1["vmstat"]["zswpout"] < v2["vmstat"]["zswpout"]


def test_the_comparison_has_a_row_per_zswap_counter():
    sim = _simulate(zswap.sim_overrides(PARAMS, 24 * GIB, 24 * GIB, "6.18.1") + ["machine.cgroup_version=1"])
    at_end = sim["store"]["debugfs_at_work_end"]
    host = json.loads(json.dumps(sim))
    host["vmstat"]["zswpout"] = int(sim["vmstat"]["zswpout"] * 1.1)
    host["store"] = zswap.store_result({"stored_pages": at_end["stored_pages"] // 2,
                                        "pool_total_size": at_end["pool_total_size"]})
    host["host"] = {"per_run": [{"elapsed_ns": host["elapsed_ns"], "vmstat": host["vmstat"],
                                 "store": host["store"]["debugfs"]}]}
    rows = {r["metric"]: r for r in compare_results(sim, host)["counters"]}
    for name in zswap.VMSTAT + zswap.STORE:
        assert name in rows, name
    assert abs(rows["zswpout"]["rel_err"] + 1 / 11) < 1e-3
    assert rows["stored_pages"]["rel_err"] > 0.9 and rows["pool_total_size"]["rel_err"] == 0
