"""``swaplab calibrate``'s swap-in phase (python/swaplab/host/swapin_cost.py) without the host:
a "host" that is the simulator itself with known figures must give those figures back, a
swap-in cheaper than the O_DIRECT submission lowers the submission, and a host that cannot
run the phase leaves a file fault's figure in place."""

import json
import os

from swaplab import _core
from swaplab.host import swapin_cost

COSTS = {"resident_touch_ns": 50, "minor_fault_ns": 1500, "cache_hit_fault_ns": 1300,
         "major_fault_cpu_ns": 28_000, "read_submit_cpu_ns": 20_000}


def simulate(text, overrides):
    return json.loads(_core.simulate(text, "<test>", overrides))


def host_with(truth):
    """A host whose swap-ins cost `truth` (the simulator with those figures)."""
    sets = [f"costs.{k}={v}" for k, v in {**COSTS, **truth}.items()]
    return lambda text, overrides: swapin_cost.simulate_run(text, 0, {}, lambda t, o: simulate(t, o + sets + overrides))


def test_the_fit_gives_back_the_fault_and_page_figures_the_host_spent():
    truth = {"swapin_fault_cpu_ns": 5_000, "swapin_page_cpu_ns": 1_500}
    got = swapin_cost.calibrate(dict(COSTS), "/nonexistent", host_run=host_with(truth), simulate=simulate)
    assert got is not None
    fit = got["fit"]
    assert abs(fit["swapin_fault_cpu_ns"] - 5_000) < 250, fit
    assert abs(fit["swapin_page_cpu_ns"] - 1_500) < 75, fit
    assert fit["read_submit_cpu_ns"] == COSTS["read_submit_cpu_ns"], "a fault figure above zero leaves the submission as measured"
    pc0 = got["measured"]["pc0"]
    assert pc0["major_faults"] > 30_000 and pc0["host_read_pass_cpu_ns"] < pc0["sim_start_read_pass_cpu_ns"], got["measured"]


def test_a_swap_in_cheaper_than_the_o_direct_submission_lowers_the_submission():
    # The host's swap-in spends 4,000 ns less than the O_DIRECT read's submission alone.
    truth = {"swapin_fault_cpu_ns": 0, "read_submit_cpu_ns": 16_000, "swapin_page_cpu_ns": 500}
    got = swapin_cost.calibrate(dict(COSTS), "/nonexistent", host_run=host_with(truth), simulate=simulate)
    assert got is not None
    fit = got["fit"]
    assert fit["swapin_fault_cpu_ns"] == 0, fit
    assert abs(fit["read_submit_cpu_ns"] - 16_000) < 250, fit
    assert got["measured"]["notes"] and "read_submit_cpu_ns" in got["measured"]["notes"][0]


def test_a_host_that_cannot_swap_leaves_the_file_fault_figure():
    notes = []

    def refuse(text, overrides):
        raise PermissionError("swapon: Operation not permitted")

    assert swapin_cost.calibrate(dict(COSTS), "/nonexistent", log=notes.append, host_run=refuse, simulate=simulate) is None
    assert notes and "swap-in phase skipped" in notes[0]


def test_a_negative_per_page_figure_from_noisy_runs_falls_back_to_the_synchronous_run():
    from swaplab.host.swapin_cost import fit

    solved = {"swapin_fault_cpu_ns": 9_000.0, "swapin_page_cpu_ns": -573.0}
    fitted, notes = fit(solved, dict(COSTS), lambda: {"swapin_fault_cpu_ns": 7_400.0, "swapin_page_cpu_ns": 0.0})
    assert fitted["swapin_page_cpu_ns"] == 0 and fitted["swapin_fault_cpu_ns"] == 7_400, fitted
    assert fitted["read_submit_cpu_ns"] == COSTS["read_submit_cpu_ns"]
    assert notes and "-573 ns per page" in notes[0]
