"""``swaplab calibrate``'s fit: measured QD1 quantile tables become the device's access-time
distributions (crates/core/src/device/service.rs), which the one parser accepts and the
simulator samples; CPU costs are the measured thread CPU times."""

import json
import os

from swaplab import _core, tomlio
from swaplab.host.calibrate import fit

P = [0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0]


def _times(median_us: float, tail_us: float):
    # a narrow body around the median and a long tail from p99 on
    body = [median_us * (0.8 + 0.4 * p) for p in P[:14]]
    return [int(x * 1000) for x in body + [tail_us / 10, tail_us / 4, tail_us / 2, tail_us]]


def _measured(bw=4096_000_000):
    q = {"p": P, "rand_read": _times(75, 4000), "seq_read": _times(50, 3000),
         "rand_read_writing": _times(120, 2000), "seq_read_writing": _times(100, 9000),
         "rand_write": _times(90, 3000)}
    dev = {"file": "/var/tmp/x", "quantiles": q, "seq_read_bytes_per_s": bw, "seq_write_bytes_per_s": bw,
           "parallelism": 4.2, "rand_read_ns": {"mean": 90000.0}}
    faults = {"resident_touch_ns": 7.0, "minor_fault_ns": 1500.0, "cache_hit_fault_ns": 900.0,
              "major_fault_cpu_ns": 12000.0, "cached_read_ns": 1100.0, "new_page_write_ns": 2900.0,
              "fault_around_page_ns": 130.0}
    return {"device": dev, "faults": faults}


def test_fit_keeps_median_and_tail_as_tables_of_access_time():
    device, costs = fit(_measured(), "vda", True)
    transfer = 4096 / 4096_000_000 * 1e9  # 1 us at 4.096 GB/s
    t = device["read_access"]
    assert t["p"] == P
    assert t["ns"][P.index(0.5)] == round(_times(75, 4000)[P.index(0.5)] - transfer)
    assert t["ns"][-1] == round(4000_000 - transfer), "the slowest request measured stays in the table"
    assert device["read_latency_ns"] == t["ns"][P.index(0.5)], "the constant is the median, not the mean"
    assert device["read_access_sequential"]["ns"][P.index(0.5)] < t["ns"][P.index(0.5)]
    assert device["read_access_writing"]["ns"][P.index(0.5)] > t["ns"][P.index(0.5)]
    assert all(a <= b for a, b in zip(t["ns"], t["ns"][1:]))
    assert costs["major_fault_cpu_ns"] == 12000 and costs["cache_hit_fault_ns"] == 900
    assert costs["fault_around_page_ns"] == 130, "each page fault-around maps has its own cost"
    assert costs["syscall_page_ns"] == 1100, "a cached page's read() is the syscall cost"
    assert costs["new_page_write_ns"] == 1800, "a new page's write() beyond a cached read()"


def test_fitted_preset_goes_through_the_parser_and_is_sampled_per_seed(tmp_path, small_toml):
    device, costs = fit(_measured(), "vda", False)
    preset = tmp_path / "lab.toml"
    preset.write_text(tomlio.dumps({"provenance": {"name": "lab"}, "device": device, "costs": costs}))
    text = open(small_toml).read()
    runs = {}
    for seed in (1, 1, 2):
        out = json.loads(_core.simulate(text, str(small_toml), [f'swap.0.device="calibrated:{preset}"', f"seed={seed}"],
                                        lambda *_: True))
        runs.setdefault(seed, []).append(out)
    a, b = runs[1]
    assert a["vmstat"]["pswpin"] > 0, "the run swaps in, so it samples read times"
    assert a["elapsed_ns"] == b["elapsed_ns"] and a["vmstat"] == b["vmstat"], "one seed, one run"
    assert runs[2][0]["elapsed_ns"] != a["elapsed_ns"], "another seed draws other service times"
    assert "read_access" in json.dumps(a["config"]), "the result embeds the resolved tables"


def test_read_tables_keep_only_the_wait_not_the_submitters_cpu():
    """The submitter's CPU per QD1 read is in the fault's measured CPU cost already: a read
    table without it, so a synchronous read does not pay it twice. Writes keep their time."""
    m = _measured()
    m["device"]["qd1_cpu_ns"] = {"rand_read": 30000.0, "seq_read": 20000.0, "rand_read_writing": 31000.0,
                                 "seq_read_writing": 21000.0, "rand_write": 40000.0}
    with_cpu, _ = fit(m, "vda", True)
    without, _ = fit(_measured(), "vda", True)
    mid = P.index(0.5)
    assert without["read_access"]["ns"][mid] - with_cpu["read_access"]["ns"][mid] == 30000
    assert without["read_access_sequential_writing"]["ns"][mid] - with_cpu["read_access_sequential_writing"]["ns"][mid] == 21000
    assert with_cpu["read_latency_ns"] == with_cpu["read_access"]["ns"][mid]
    assert with_cpu["write_access"] == without["write_access"], "writes keep their whole time"


def test_fit_names_the_read_submission_part_of_the_major_fault_cpu():
    # A store-served swap-in submits no read, so the simulator takes this part off the major
    # fault's CPU; it is the QD1 read's submitting CPU, leaving at least a cache-hit fault.
    m = _measured()
    assert fit(m, "vda", True)[1]["read_submit_cpu_ns"] == 0, "no CPU measured, nothing to take off"
    m["device"]["qd1_cpu_ns"] = {"rand_read": 10500.0}
    assert fit(m, "vda", True)[1]["read_submit_cpu_ns"] == 10500
    m["device"]["qd1_cpu_ns"] = {"rand_read": 11800.0}
    costs = fit(m, "vda", True)[1]
    assert costs["read_submit_cpu_ns"] == 12000 - 900, "a major fault keeps a cache-hit fault's CPU"
