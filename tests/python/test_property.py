"""Random small workloads: the simulator either returns a result or raises ConfigError —
never a panic, a crash or another exception — and results keep basic invariants."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import swaplab

PATTERNS = ["sequential", "random", "zipf", "strided", "matrix", "bogus"]
DEVICES = ["hdd", "sata-ssd", "nvme", "ramdisk", "zram", "floppy"]
READAHEAD = ["auto", "none", "fixed", "fixed-run", "adaptive", "adaptive-2012", "vma", "smart"]
PROFILES = ["2.6.28", "3.14", "4.14", "6.x", "1.0"]


@st.composite
def workloads(draw):
    n_maps = draw(st.integers(1, 2))
    maps = [{"name": f"m{i}", "kind": draw(st.sampled_from(["anon", "shmem", "file"])),
             "size": f"{draw(st.integers(0, 24))}MiB"} for i in range(n_maps)]
    phases = []
    for _ in range(draw(st.integers(1, 2))):
        ph = {"mapping": draw(st.sampled_from([m["name"] for m in maps] + ["nope"])),
              "pattern": draw(st.sampled_from(PATTERNS)),
              "cycles": draw(st.sampled_from([0.5, 1.0, 2.0, 0.0])),
              "write_ratio": draw(st.sampled_from([0.0, 0.5, 1.0, 1.5]))}
        if draw(st.booleans()):
            ph["compute"] = draw(st.sampled_from(["0ns", "100ns", "2us"]))
        if ph["pattern"] == "matrix":
            ph["block_pages"] = draw(st.sampled_from([0, 4, 64]))
        phases.append(ph)
    task = {"name": "t", "instances": draw(st.integers(1, 3)), "mapping": maps, "phase": phases}
    if draw(st.booleans()):
        task["repeat"] = True
        if draw(st.integers(0, 4)):
            task["time_limit"] = draw(st.sampled_from(["20ms", "100ms"]))
    doc = {
        "seed": draw(st.integers(1, 2**32)),
        "machine": {"cpus": draw(st.integers(0, 4)), "ram": f"{draw(st.sampled_from([16, 64, 96, 128]))}MiB"},
        "kernel": {"profile": draw(st.sampled_from(PROFILES)),
                   "readahead": draw(st.sampled_from(READAHEAD)),
                   "page_cluster": draw(st.integers(0, 5)),
                   "swappiness": draw(st.sampled_from([0, 60, 100, 200, 300]))},
        "swap": [{"device": draw(st.sampled_from(DEVICES)), "size": f"{draw(st.integers(0, 64))}MiB"}
                 for _ in range(draw(st.integers(0, 2)))],
        "task": [task],
    }
    if draw(st.booleans()):
        doc["machine"]["memcg_limit"] = f"{draw(st.integers(0, 48))}MiB"
    return doc


def expected_tasks(doc):
    return sum(t["instances"] for t in doc["task"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_random_workloads_never_crash(doc):
    try:
        r = swaplab.simulate(doc)
    except swaplab.ConfigError as e:
        msg = str(e)
        assert msg.startswith("<dict>"), msg
        assert "\n" not in msg.strip(), msg
        return
    raw = r.raw
    json.dumps(raw)  # serializable
    assert not r.interrupted
    assert len(raw["tasks"]) == expected_tasks(doc)
    vm = r.vmstat
    # Before 6.x PG_readahead aliases PG_reclaim: faulting a page still marked for immediate
    # reclaim counts a hit too (as crates/core/tests/common/mod.rs checks), so only 6.x bounds
    # hits by readahead pages.
    if doc["kernel"]["profile"] == "6.x":
        assert vm["swap_ra_hit"] <= vm["swap_ra"]
    assert vm["pgmajfault"] <= vm["pgfault"]
    assert vm["pgsteal_kswapd"] <= vm["pgscan_kswapd"]
    assert vm["pgsteal_direct"] <= vm["pgscan_direct"]
    if not doc["swap"]:
        assert vm["pswpout"] == 0 and vm["pswpin"] == 0
    for t in raw["tasks"]:
        assert t["elapsed_ns"] == t["end_ns"] - t["start_ns"]
        assert t["touch_latency_ns"]["p50"] <= t["touch_latency_ns"]["max"]
        # Every fault completes one touch (a fault that sleeps on I/O is counted once, when
        # its retry maps the page).
        assert t["minor_faults"] + t["major_faults"] <= t["touches"], t
    # The per-task fault counts (completed faults) are the vmstat counters split by task, except
    # that vmstat also counts a swap-in attempt whose page was reclaimed before it was mapped
    # (a major fault of its own, one per extra read).
    task_faults = sum(t["minor_faults"] + t["major_faults"] for t in raw["tasks"])
    assert task_faults <= vm["pgfault"]
    retried = vm["pgfault"] - task_faults
    assert sum(t["major_faults"] for t in raw["tasks"]) + retried == vm["pgmajfault"]
    df = r.tasks
    assert len(df) == expected_tasks(doc)
