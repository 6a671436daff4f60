"""``swaplab calibrate``'s reclaim phase (python/swaplab/host/reclaim_cost.py) without the host:
the factor it fits makes the simulator spend the host's CPU per page reclaimed on the
calibration workload, and a host that cannot run the phase leaves the defaults."""

import json

import pytest

from swaplab import _core
from swaplab.host import reclaim_cost

COSTS = {"resident_touch_ns": 50, "minor_fault_ns": 1500}


def fake_host(reclaim_ns_per_page: float, stolen: int = 49_000, pages: int = 65_536):
    """A host result of the calibration workload whose thread spent `reclaim_ns_per_page` per
    page reclaimed besides its touches and faults."""
    cpu = pages * (COSTS["resident_touch_ns"] + COSTS["minor_fault_ns"]) + reclaim_ns_per_page * stolen
    return {"tasks": [{"name": "reclaim", "cpu_ns": int(cpu), "touches": pages, "minor_faults": pages, "oom_killed": False}],
            "vmstat": {"pgsteal_anon": stolen}}


def simulate(text, overrides):
    return json.loads(_core.simulate(text, "<test>", overrides))


def sim_cpu_per_page(costs):
    import os

    text = reclaim_cost.workload(os.cpu_count() or 1, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    res = reclaim_cost.simulate_calibration(text, costs, simulate)
    return sum(res["direct_reclaim_cpu_by_category"].values()) / res["vmstat"]["pgsteal_anon"]


def test_the_fitted_costs_give_the_hosts_reclaim_cpu_per_page():
    host_ns = 4_400.0
    got = reclaim_cost.calibrate(dict(COSTS), "/nonexistent", host_run=lambda t: fake_host(host_ns), simulate=simulate)
    assert got is not None
    fitted = got["fit"]
    assert set(fitted) == set(reclaim_cost.SCALED)
    assert got["measured"]["factor"] > 1.5, got["measured"]
    # Re-simulating with the fitted costs gives the host's figure (the block layer's part is
    # the device's and unchanged; the scaled categories are linear in their parameters).
    again = sim_cpu_per_page({**COSTS, **fitted})
    assert abs(again - host_ns) / host_ns < 0.05, (again, host_ns)
    # Every scaled parameter moved by the same factor.
    ratios = {k: fitted[k] / d for k, d in (("rmap_walk_ns", 150), ("unmap_ns", 250), ("scan_page_ns", 100))}
    assert max(ratios.values()) - min(ratios.values()) < 0.02, ratios


def test_a_host_that_cannot_reclaim_leaves_the_defaults():
    notes = []

    def refuse(text):
        raise PermissionError("swapon: Operation not permitted")

    assert reclaim_cost.calibrate(dict(COSTS), "/nonexistent", log=notes.append, host_run=refuse, simulate=simulate) is None
    assert notes and "reclaim phase skipped" in notes[0]


def test_a_run_that_reclaimed_nothing_is_not_a_measurement():
    with pytest.raises(ValueError, match="reclaimed nothing"):
        reclaim_cost.host_reclaim_ns_per_page(fake_host(1000.0, stolen=0), COSTS)


def test_a_factor_out_of_range_is_refused():
    sim = {"scaled": 1000.0, "fixed": 100.0}
    with pytest.raises(ValueError, match="outside"):
        reclaim_cost.fit(100_000.0, sim, {k: 100 for k in reclaim_cost.SCALED})
    f = reclaim_cost.fit(3100.0, sim, {k: 100 for k in reclaim_cost.SCALED})
    assert f["factor"] == pytest.approx(3.0) and f["costs"]["unmap_ns"] == 300
