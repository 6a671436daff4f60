"""Host-runner tests. They run as root on a machine with a memory cgroup controller and swap
support (CI is such a machine). They never skip: when the host cannot run them they FAIL and
say why, because a silently skipped host test is a host runner nobody checked."""

from __future__ import annotations

import glob
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def machine_state() -> dict:
    """Everything a host run may touch, to compare before/after."""
    from swaplab.host import cgroup
    from swaplab.host.sysfs import knob_snapshot

    root = cgroup.V1_ROOT if cgroup.detect() == 1 else cgroup.V2_ROOT
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    zram = {os.path.basename(d): open(f"{d}/disksize").read().strip() for d in sorted(glob.glob("/sys/block/zram*"))}
    ra_kb = {os.path.basename(d): open(f"{d}/queue/read_ahead_kb").read().strip()
             for d in sorted(glob.glob("/sys/block/*"))
             if not os.path.basename(d).startswith(("loop", "zram")) and os.path.exists(f"{d}/queue/read_ahead_kb")}
    rot = {os.path.basename(d): open(f"{d}/queue/rotational").read().strip() for d in sorted(glob.glob("/sys/block/loop*"))}
    with open("/proc/swaps") as f:
        swaps = f.read()
    return {
        "knobs": knob_snapshot(),
        "swaps": swaps,
        "cgroups": sorted(n for n in os.listdir(root) if n.startswith("swaplab")),
        "loops": loops,
        "zram": zram,
        "loop_rotational": rot,
        "read_ahead_kb": ra_kb,
        "journals": sorted(glob.glob("/run/swaplab/journal-*")),
        "workdir": sorted(glob.glob("/var/tmp/swaplab/swaplab-*")),
        "workdir_exists": os.path.isdir("/var/tmp/swaplab"),
    }


@pytest.fixture
def host_ready():
    """Fail (never skip) with the reason when this host cannot run host tests."""
    from swaplab.host import cgroup
    from swaplab.host.journal import active_swaps

    if os.geteuid() != 0:
        pytest.fail("host-runner tests need root (CI runs them as root): the runner creates cgroups and swap devices")
    if cgroup.detect() is None:
        pytest.fail("host-runner tests need a memory cgroup controller (v1 or v2); none found")
    if active_swaps():
        pytest.fail(f"host-runner tests need a machine without active swap; found {active_swaps()}")
    before = machine_state()
    yield before
    after = machine_state()
    assert after == before, "the machine was not restored"


@pytest.fixture
def small_toml():
    return os.path.join(HERE, "small.toml")
