"""The host runner cannot run forked tasks (`fork_of`): its workers are independent processes,
so it refuses before touching the machine rather than run private copies of the memory the
simulated children share with their parent."""
import pytest

from swaplab.host.errors import PreconditionError
from swaplab.host.runner import HostOptions, preflight


def test_preflight_refuses_forked_tasks_before_anything_else():
    kernel = {"reclaim": "classic", "readahead": "auto", "bailout": "auto", "profile": "6.x"}
    tasks = [{"name": "zygote"}, {"name": "renderer", "fork_of": "zygote"}]
    # Not root: the fork is still the reason given.
    with pytest.raises(PreconditionError, match=r"fork_of \(renderer\) is simulated only"):
        preflight({"kernel": kernel, "task": tasks}, HostOptions(euid=1000))
    with pytest.raises(PreconditionError, match="root"):
        preflight({"kernel": kernel, "task": tasks[:1]}, HostOptions(euid=1000))
