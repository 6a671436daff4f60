"""The host runner cannot run MGLRU on a kernel without CONFIG_LRU_GEN: it refuses with that
reason before touching the machine (no root needed to see it), and `swaplab compare` reports
the refusal instead of a table."""
import os

import pytest

from conftest import SMALL, run_cli
from swaplab.host.errors import PreconditionError
from swaplab.host.runner import HostOptions, _check_reclaim_policy, preflight
from swaplab.host.sysfs import MGLRU


def test_refusal_names_the_missing_kernel_option():
    with pytest.raises(PreconditionError, match="CONFIG_LRU_GEN"):
        _check_reclaim_policy("mglru", have_lru_gen=False)
    with pytest.raises(PreconditionError, match="not supported by the host runner"):
        _check_reclaim_policy("mglru", have_lru_gen=True)
    _check_reclaim_policy("classic", have_lru_gen=False)


def test_preflight_refuses_mglru_before_anything_else():
    kernel = {"reclaim": "mglru", "readahead": "auto", "bailout": "auto", "profile": "6.x"}
    # Not root: the reclaim policy is still the reason given.
    with pytest.raises(PreconditionError, match="mglru") as e:
        preflight({"kernel": kernel}, HostOptions(euid=1000))
    if not os.path.exists(MGLRU):
        assert "CONFIG_LRU_GEN" in str(e.value)


def test_compare_says_mglru_is_unavailable(tmp_path):
    wl = tmp_path / "w.toml"
    wl.write_text(SMALL)
    proc = run_cli("compare", str(wl), "--set", 'kernel.reclaim="mglru"', timeout=300)
    assert proc.returncode != 0, proc.stdout
    assert "mglru" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "counter" not in proc.stdout, "no comparison table"
