"""The host runner cannot map one file into several processes (`file` on a mapping): its
workers get a data file per mapping, so it refuses before touching the machine rather than run
private copies of what the simulated processes share."""
import pytest

from swaplab.host.errors import PreconditionError
from swaplab.host.runner import HostOptions, preflight


def test_preflight_refuses_named_shared_files_before_anything_else():
    kernel = {"reclaim": "classic", "readahead": "auto", "bailout": "auto", "profile": "6.x"}
    text = {"name": "text", "kind": "file", "size": 1 << 20, "file": "app"}
    tasks = [{"name": "a", "mapping": [text]}, {"name": "b", "mapping": [text]}]
    with pytest.raises(PreconditionError, match=r"file = 'app' is simulated only"):
        preflight({"kernel": kernel, "task": tasks}, HostOptions(euid=1000))
    own = [{"name": "a", "mapping": [dict(text, file=None)]}]
    with pytest.raises(PreconditionError, match="root"):
        preflight({"kernel": kernel, "task": own}, HostOptions(euid=1000))
