import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# The Ctrl-C tests send SIGINT to `python -m swaplab` children and expect the default
# KeyboardInterrupt. A shell starts a background job (`cmd &`) with SIGINT ignored, an ignored
# signal stays ignored across exec, and Python then installs no handler: the children would
# run on through every Ctrl-C. Give this process (and so its children) the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXPERIMENTS = ROOT / "experiments"

SMALL = """\
name = "small"

[machine]
cpus = 2
ram = "96MiB"

[[swap]]
device = "sata-ssd"
size = "128MiB"

[[task]]
name = "seq"
[[task.mapping]]
name = "buf"
kind = "anon"
size = "64MiB"
[[task.phase]]
mapping = "buf"
pattern = "sequential"
cycles = 2
"""


def run_cli(*args, cwd=None, timeout=600, env=None):
    """Run the installed CLI as a user would (``python -m swaplab``)."""
    e = dict(os.environ)
    e.pop("SWAPLAB_EXPERIMENTS", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "swaplab", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=e)


@pytest.fixture
def small_toml(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(SMALL)
    return p


@pytest.fixture
def write_toml(tmp_path):
    def write(text, name="w.toml"):
        p = tmp_path / name
        p.write_text(text)
        return p
    return write
