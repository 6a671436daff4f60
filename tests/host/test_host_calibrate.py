"""``swaplab calibrate`` on this machine: the submitting thread's CPU per QD1 request is
measured beside each request-time table, and the fit takes it out of the read tables (the
major fault's measured CPU cost holds it; left in, a synchronous read paid it twice)."""

import glob
import os
import subprocess
import sys

from swaplab.experiments import tomllib
from swaplab.host import tlb_cost


def test_calibrate_measures_the_submitters_cpu_and_keeps_it_out_of_the_read_tables(host_ready, tmp_path):
    out = tmp_path / "preset.toml"
    r = subprocess.run([sys.executable, "-m", "swaplab", "calibrate", "--quick", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    preset = tomllib.loads(out.read_text())
    measured = preset["measured"]["device"]
    cpu = measured["qd1_cpu_ns"]
    q = measured["quantiles"]
    for case in ("rand_read", "seq_read", "rand_read_writing", "seq_read_writing", "rand_write"):
        median = q[case][q["p"].index(0.5)]
        assert 0 < cpu[case] < q[case][-1], f"{case}: submitter CPU {cpu[case]} ns against requests up to {q[case][-1]} ns"
        assert median > 0, case
    transfer = 4096 / preset["device"]["read_bandwidth"] * 1e9
    median = q["rand_read"][q["p"].index(0.5)]
    expected = max(0, round(median - transfer - cpu["rand_read"]))
    assert abs(preset["device"]["read_latency_ns"] - expected) <= 1, (preset["device"]["read_latency_ns"], expected)
    write_median = q["rand_write"][q["p"].index(0.5)]
    assert preset["device"]["write_latency_ns"] >= round(write_median - 4096 / preset["device"]["write_bandwidth"] * 1e9) - 1, \
        "writes keep their whole time"
    costs = preset["costs"]
    assert costs["resident_touch_ns"] > 0 and costs["syscall_page_ns"] > costs["resident_touch_ns"], costs
    assert costs["new_page_write_ns"] >= 0, costs
    assert os.listdir(tmp_path) == ["preset.toml"], "the atomic write left a temporary file behind"
    # The compressor phase (compressor_cost.py): zswap's compressor through zram, then zram
    # left as found (no device configured).
    comp, raw = preset["compressor"], preset["measured"]["compressor"]
    with open("/sys/module/zswap/parameters/compressor") as f:
        assert comp["compressor"] == raw["compressor"] == f.read().strip()
    assert comp["compress_ns"] > 0 and comp["decompress_ns"] > 0 and 1 <= comp["full_cost_bytes"] <= 4096, comp
    w = raw["write_cpu_ns"]
    assert w[-1] > w[0], f"a page that does not compress costs more to write than a zero page: {w}"
    for d in glob.glob("/sys/block/zram*"):
        with open(os.path.join(d, "disksize")) as f:
            assert f.read().strip() == "0", f"{d} left configured"
    # The reclaim phase (reclaim_cost.py): the host's reclaim CPU per page, and the simulator's
    # reclaim parameters scaled by the factor that gives the same; no swap or cgroup left.
    rec = preset["measured"]["reclaim"]
    assert rec["pgsteal_anon"] > 0 and rec["host_reclaim_ns_per_page"] > 0, rec
    factor = rec["factor"]
    for k in ("scan_page_ns", "rmap_walk_ns", "unmap_ns", "free_page_ns", "swap_alloc_ns"):
        assert k in costs, f"reclaim phase did not set {k}"
    assert abs(costs["rmap_walk_ns"] - 150 * factor) <= 1, (costs["rmap_walk_ns"], factor)
    # The swap-in phase (swapin_cost.py): a swap-in's own CPU and its per-page CPU, fitted from
    # page-cluster 0 and 3 read-back passes; the whole of a synchronous swap-in is what the
    # host spent per fault within the fit's rounding.
    sw = preset["measured"]["swapin"]
    assert sw["pc0"]["major_faults"] > 0 and sw["pc3"]["pswpin"] > sw["pc3"]["major_faults"], sw
    for k in ("swapin_fault_cpu_ns", "swapin_page_cpu_ns", "read_submit_cpu_ns"):
        assert k in costs, f"swap-in phase did not set {k}"
    assert costs["read_submit_cpu_ns"] <= costs["major_fault_cpu_ns"], costs
    with open("/proc/swaps") as f:
        assert len(f.read().strip().splitlines()) == 1, "the reclaim and swap-in phases left swap on"
    assert not [d for d in os.listdir("/sys/fs/cgroup/memory" if os.path.isdir("/sys/fs/cgroup/memory") else "/sys/fs/cgroup")
                if d.startswith("swaplab")], "the reclaim phase left a cgroup"
    # The TLB-flush phase (tlb_cost.py): on this x86 machine with two or more CPUs, the probe
    # counted IPIs (every flush interrupted the spinning peer in most rounds) and the preset
    # carries the sender's and the interrupted CPU's cost per IPI.
    if len(os.sched_getaffinity(0)) >= 2 and "TLB shootdowns" in open("/proc/interrupts").read():
        tlb = preset["measured"]["tlb"]
        assert tlb["cpu_flusher"] != tlb["cpu_peer"], tlb
        assert 0.5 <= tlb["ipis_per_flush"] <= 1.01, f"the peer took {tlb['ipis_per_flush']} IPIs per flush"
        assert all(r["local_ipis"] <= r["iters"] // 100 for r in tlb["rounds"]), "the forked child's flushes IPI'd the peer"
        per_target = tlb_cost.default_per_cpu_ns()
        assert costs["tlb_shootdown_ns"] == max(0, round(tlb["initiator_ns"] - per_target)), (costs, tlb["initiator_ns"])
        assert tlb["initiator_ns"] > 0 and costs["tlb_ipi_receive_ns"] > 0, tlb
