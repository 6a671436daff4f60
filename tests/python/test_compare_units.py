"""`swaplab compare` simulates the host's memory cgroup hierarchy (v1 has no memcg dirty domain)."""

import json

from swaplab.host import cgroup, compare


def test_the_simulation_side_takes_the_host_cgroup_version(monkeypatch):
    monkeypatch.setattr(cgroup, "detect", lambda: 1)
    assert compare.host_cgroup_overrides(["kernel.swappiness=10"]) == ["machine.cgroup_version=1"]
    monkeypatch.setattr(cgroup, "detect", lambda: 2)
    assert compare.host_cgroup_overrides([]) == ["machine.cgroup_version=2"]


def test_a_cgroup_version_the_user_set_is_kept(monkeypatch):
    monkeypatch.setattr(cgroup, "detect", lambda: 1)
    assert compare.host_cgroup_overrides(["machine.cgroup_version = 2"]) == []


def test_no_memory_cgroup_controller_adds_nothing(monkeypatch):
    monkeypatch.setattr(cgroup, "detect", lambda: None)
    assert compare.host_cgroup_overrides([]) == []


SCAN = """
name = "scan"
[machine]
ram = "1GiB"
memcg_limit = "100MiB"
[[task]]
name = "t"
[[task.mapping]]
name = "f"
kind = "file"
size = "8MiB"
[[task.phase]]
mapping = "f"
pattern = "sequential"
"""


def test_large_folios_follow_the_file_system_and_kernel_release():
    assert compare.large_folios_on("ext4", "6.18.44-fc-v669")
    assert not compare.large_folios_on("ext4", "6.15.2")
    assert compare.large_folios_on("xfs", "5.18.0")
    assert not compare.large_folios_on("btrfs", "6.18.0")
    assert not compare.large_folios_on(None, "6.18.0")


def test_the_page_cache_side_takes_the_hosts_folios_and_the_runners_stat_reads(monkeypatch, tmp_path):
    opts = compare.HostOptions(workdir=str(tmp_path))
    monkeypatch.setattr(compare, "fs_type_of", lambda p: "ext4")
    monkeypatch.setattr(compare.os, "uname", lambda: type("U", (), {"release": "6.18.1"})())
    got = compare.host_pagecache_overrides(SCAN, "scan.toml", [], opts)
    assert got == ["pagecache.large_folios=true", "machine.memory_stat_reader=100000000ns",
                   "machine.memory_stat_reader_jitter=10000000ns"]
    kept = compare.host_pagecache_overrides(SCAN, "scan.toml", ["pagecache.large_folios=false", "machine.memory_stat_reader=1s"], opts)
    assert kept == []
    old = compare.host_pagecache_overrides(SCAN, "scan.toml", ["kernel.profile=4.14"], opts)
    assert old == ["machine.memory_stat_reader=100000000ns", "machine.memory_stat_reader_jitter=10000000ns"]
    fast = compare.host_pagecache_overrides(SCAN, "scan.toml", ["kernel.profile=4.14", "sim.sample_interval=10ms"], opts)
    assert fast == ["machine.memory_stat_reader=10000000ns", "machine.memory_stat_reader_jitter=9999999ns"], \
        "a read is late by less than one period"


def test_a_work_directory_not_created_yet_still_gets_its_file_systems_folios(monkeypatch, tmp_path):
    # A fresh machine: the runner creates /var/tmp/swaplab on the first run, after the
    # simulation's side was decided; it once lost large folios there.
    opts = compare.HostOptions(workdir=str(tmp_path / "not-yet"))
    monkeypatch.setattr(compare.os, "uname", lambda: type("U", (), {"release": "6.18.1"})())
    monkeypatch.setattr(compare, "fs_type_of", lambda p: "ext4" if p == str(tmp_path / "not-yet") else None)
    got = compare.host_pagecache_overrides(SCAN, "scan.toml", [], opts)
    assert "pagecache.large_folios=true" in got


def test_fs_type_of_a_real_path():
    assert compare.fs_type_of("/proc") == "proc"
    assert compare.fs_type_of("/proc/no/such/dir") == "proc"


SWAPPING = """
name = "swapping"
seed = 5
[machine]
ram = "1GiB"
memcg_limit = "24MiB"
[[swap]]
device = "sata-ssd"
size = "128MiB"
[[task]]
name = "t"
[[task.mapping]]
name = "heap"
kind = "anon"
size = "40MiB"
[[task.phase]]
mapping = "heap"
pattern = "random"
write_ratio = 0.5
touches = 40000
"""


def test_the_simulated_side_runs_once_per_host_run_with_seeds_from_the_workloads():
    from swaplab import _core
    from swaplab.host import sim_runs

    one = sim_runs.simulate_runs(SWAPPING, "s.toml", [], 1)
    alone = json.loads(_core.simulate(SWAPPING, "s.toml", []))
    assert one["vmstat"] == alone["vmstat"], "one run is what `swaplab run` gives"
    three = sim_runs.simulate_runs(SWAPPING, "s.toml", [], 3)
    runs = three["sim_runs"]
    assert runs["runs"] == 3 and runs["seeds"] == [5, 6, 7]
    per_seed = [json.loads(_core.simulate(SWAPPING, "s.toml", [f"seed={s}"])) for s in runs["seeds"]]
    for k in ("pswpout", "pswpin", "pgmajfault"):
        xs = sorted(r["vmstat"][k] for r in per_seed)
        assert three["vmstat"][k] == xs[1], (k, xs)
        assert (runs["spread"][k]["min"], runs["spread"][k]["max"]) == (xs[0], xs[2])
    assert len({r["elapsed_ns"] for r in per_seed}) > 1, "the seeds draw different device service times"
    assert three["elapsed_ns"] == sorted(r["elapsed_ns"] for r in per_seed)[1]


def test_compare_rows_carry_the_simulated_spread():
    from swaplab.host import sim_runs

    sim = sim_runs.simulate_runs(SWAPPING, "s.toml", [], 3)
    host = json.loads(json.dumps(sim))
    host["host"] = {"per_run": [{"elapsed_ns": sim["elapsed_ns"], "vmstat": sim["vmstat"]}], "runs": 1}
    rows = {r["metric"]: r for r in compare.compare_results(sim, host)["counters"]}
    sp = sim["sim_runs"]["spread"]["pswpout"]
    assert (rows["pswpout"]["sim_min"], rows["pswpout"]["sim_max"]) == (sp["min"], sp["max"])
    assert rows["elapsed_s"]["sim_min"] <= rows["elapsed_s"]["sim"] <= rows["elapsed_s"]["sim_max"]
    assert "sim min..max" in compare.render(compare.compare_results(sim, host))


def test_compare_sets_phase_against_phase():
    """A program of several phases gets a row per phase (a write pass apart from its read-back
    pass); the simulator's phases add up to its task's elapsed time."""
    from swaplab import _core

    two = SWAPPING + '[[task.phase]]\nmapping = "heap"\npattern = "sequential"\nwrite_ratio = 0.0\n'
    sim = json.loads(_core.simulate(two, "s.toml", []))
    t = sim["tasks"][0]
    assert len(t["phase_elapsed_ns"]) == 2 and sum(t["phase_elapsed_ns"]) == t["elapsed_ns"]
    host = json.loads(json.dumps(sim))
    host["tasks"][0]["phase_elapsed_ns"] = [x * 2 for x in t["phase_elapsed_ns"]]
    host["host"] = {"per_run": [{"elapsed_ns": sim["elapsed_ns"], "vmstat": sim["vmstat"]}], "runs": 1}
    rows = {r["metric"]: r for r in compare.compare_results(sim, host)["tasks"]}
    assert rows["phase_elapsed_ns.1"]["sim"] == t["phase_elapsed_ns"][1]
    assert rows["phase_elapsed_ns.1"]["rel_err"] == -0.5
    assert "t#0 phase_elapsed_ns.0" in compare.render(compare.compare_results(sim, host))


def test_compare_sets_cpu_against_cpu_per_phase():
    """Beside each phase's elapsed time, compare sets the CPU the task ran in it against the
    host thread's CPU clock, so a phase that is off shows whether its work or its waiting is."""
    from swaplab import _core

    two = SWAPPING + '[[task.phase]]\nmapping = "heap"\npattern = "sequential"\nwrite_ratio = 0.0\n'
    sim = json.loads(_core.simulate(two, "s.toml", []))
    t = sim["tasks"][0]
    assert sum(t["phase_cpu_ns"]) == t["cpu_ns"] <= t["elapsed_ns"]
    host = json.loads(json.dumps(sim))
    host["tasks"][0]["phase_cpu_ns"] = [x * 4 for x in t["phase_cpu_ns"]]
    host["host"] = {"per_run": [{"elapsed_ns": sim["elapsed_ns"], "vmstat": sim["vmstat"]}], "runs": 1}
    rows = {r["metric"]: r for r in compare.compare_results(sim, host)["tasks"]}
    assert rows["cpu_ns"]["sim"] == t["cpu_ns"] and rows["cpu_ns"]["rel_err"] == 0.0
    assert rows["phase_cpu_ns.1"]["sim"] == t["phase_cpu_ns"][1]
    assert rows["phase_cpu_ns.1"]["rel_err"] == -0.75
    assert "t#0 phase_cpu_ns.1" in compare.render(compare.compare_results(sim, host))


def test_the_simulated_side_keeps_cpus_in_mm_cpumask_on_an_x86_host_from_6_12():
    assert compare.host_tlb_overrides([], "x86_64", "6.18.44-fc-v669") == ["kernel.lazy_mm_cpumask=true"]
    assert compare.host_tlb_overrides([], "x86_64", "6.11.9") == []
    assert compare.host_tlb_overrides([], "aarch64", "6.18.0") == []
    assert compare.host_tlb_overrides(["kernel.lazy_mm_cpumask=false"], "x86_64", "6.18.0") == []
    assert compare.host_tlb_overrides([], "x86_64", "garbage") == []


def test_compare_sets_the_hosts_tlb_flush_ipis_against_the_simulated_ones(tmp_path):
    """The host's TLB-flush IPIs are the "TLB shootdowns" line of /proc/interrupts summed
    over CPUs; compare sets them against the simulator's (summary.tlb_ipis), with the host's
    spread, and leaves the row out where the host has no such count (arm64)."""
    from swaplab.host import runner, sim_runs

    interrupts = tmp_path / "interrupts"
    interrupts.write_text("           CPU0       CPU1\n  0:         45          0   IO-APIC   2-edge  timer\n"
                          " TLB:    6666702    5551423   TLB shootdowns\n")
    assert runner.tlb_ipis_received(str(interrupts)) == 6666702 + 5551423
    interrupts.write_text("           CPU0       CPU1\n IPI0:  10  20  Rescheduling interrupts\n")
    assert runner.tlb_ipis_received(str(interrupts)) is None

    sim = sim_runs.simulate_runs(SWAPPING, "s.toml", [], 1)
    runs = []
    for n in (900, 1000, 1300):
        r = json.loads(json.dumps(sim))
        r["kind"], r["summary"]["tlb_ipis"] = "host", n
        r["host"] = {}
        runs.append(r)
    host = runner.aggregate(runs)
    assert host["summary"]["tlb_ipis"] == 1000
    rows = {r["metric"]: r for r in compare.compare_results(sim, host)["counters"]}
    assert (rows["tlb_ipis"]["host"], rows["tlb_ipis"]["host_min"], rows["tlb_ipis"]["host_max"]) == (1000, 900, 1300)
    assert rows["tlb_ipis"]["sim"] == sim["summary"]["tlb_ipis"]
    host["summary"]["tlb_ipis"] = None
    assert "tlb_ipis" not in {r["metric"] for r in compare.compare_results(sim, host)["counters"]}


def test_compare_sets_the_swap_devices_time_per_read_and_notes_a_device_out_of_its_calibrated_state():
    """diskstats' time spent reading per read on the host against the simulated device's
    submission-to-completion time per read: a disk whose reads take longer than in its
    calibration shows here, not only as a longer elapsed time."""
    from swaplab.host import sim_runs

    sim = sim_runs.simulate_runs(SWAPPING, "s.toml", [], 1)
    dev = next(d for d in sim["devices"] if d["role"] == "swap")
    assert dev["reads"] > 0 and dev["read_ticks_ns"] >= dev["reads"] * 1000, dev
    per_read = dev["read_ticks_ns"] / dev["reads"] / 1000
    host = json.loads(json.dumps(sim))
    host["host"] = {"per_run": [{"elapsed_ns": sim["elapsed_ns"], "vmstat": sim["vmstat"]}], "runs": 1}
    out = compare.compare_results(sim, host)
    row = next(r for r in out["counters"] if r["metric"] == "swap_read_us_per_request")
    assert abs(row["sim"] - per_read) < 0.01 and row["rel_err"] == 0.0
    assert not [n for n in out["notes"] if "calibrated" in n]
    hdev = next(d for d in host["devices"] if d["role"] == "swap")
    hdev["read_ticks_ns"] *= 2
    out = compare.compare_results(sim, host)
    assert [n for n in out["notes"] if "not in the state it was calibrated in" in n], out["notes"]
