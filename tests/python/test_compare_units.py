"""`swaplab compare` simulates the host's memory cgroup hierarchy (v1 has no memcg dirty domain)."""

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
