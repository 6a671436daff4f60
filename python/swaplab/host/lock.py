"""One host run at a time on a machine.

Two host runs started together would both pass the "swap already in use" check, measure each
other's traffic and journal each other's knob values as "old". So every command that checks or
changes the machine (``host run``, ``compare``, ``host cleanup``) first takes an exclusive
``flock`` on ``/run/swaplab/host.lock`` and keeps it until the machine is restored. The lock is
released by the kernel when the process dies, even by SIGKILL, so it can never be left stale;
the pid written into the file is only for the refusal message.

The lock is re-entrant within a process (``run_host`` holds it across its runs, ``run_once``
takes it again for a direct call).
"""

from __future__ import annotations

import errno
import fcntl
import os
from typing import Optional

from .errors import PreconditionError

LOCK_NAME = "host.lock"


class HostLock:
    """``with HostLock(directory):`` — hold the machine-wide host-runner lock, or raise
    PreconditionError naming the run that holds it."""

    _held: dict = {}  # directory -> [fd, depth] held by this process

    def __init__(self, directory: str):
        self.directory = directory
        self.path = os.path.join(directory, LOCK_NAME)

    def __enter__(self) -> "HostLock":
        held = HostLock._held.get(self.directory)
        if held is not None:
            held[1] += 1
            return self
        os.makedirs(self.directory, mode=0o755, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise PreconditionError(
                    f"another swaplab host run is in progress ({_holder(self.path)}, lock {self.path}): "
                    "one host run at a time; wait for it to finish") from None
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        HostLock._held[self.directory] = [fd, 1]
        return self

    def __exit__(self, *exc) -> bool:
        held = HostLock._held[self.directory]
        held[1] -= 1
        if held[1] == 0:
            del HostLock._held[self.directory]
            os.close(held[0])  # closing the only descriptor releases the flock
        return False


def _holder(path: str) -> str:
    pid: Optional[str]
    try:
        with open(path) as f:
            pid = f.read().strip() or None
    except OSError:
        pid = None
    return f"pid {pid}" if pid else "pid unknown"
