"""Signals during a host run: the first SIGINT/SIGTERM/SIGHUP unwinds the run; none may
interrupt putting the machine back.

While :class:`RunSignals` is entered (in the main thread), SIGINT raises KeyboardInterrupt and
SIGTERM/SIGHUP raise :class:`Terminated` (a KeyboardInterrupt), so one ``finally`` restores
the machine for all three. Inside ``with sig.deferred():`` — around the restore — a signal is
only recorded: a second SIGTERM a few ms after the first (systemd, ``timeout``, an impatient
user) must not kill the runner halfway through swapoff. The handlers stay installed for the
whole restore; they are put back only when it is over, and a signal that arrived during a
restore that ended normally is raised then. Once a signal has stopped the run, a default
disposition (fatal SIGTERM/SIGHUP, SIGINT's KeyboardInterrupt) is replaced by SIG_IGN: the
process is on its way out. The restore itself additionally blocks the
signals at the OS level (journal.Journal.restore), which the ``swapoff`` and ``losetup``
children inherit, so a Ctrl-C sent to the terminal's process group cannot kill them either.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Dict, Iterator, Optional

from .errors import Terminated

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class RunSignals:
    def __init__(self) -> None:
        self._old: Dict[int, Any] = {}
        self._depth_deferred = 0
        self.raised: Optional[int] = None   # the signal that started the unwinding
        self.pending: Optional[int] = None  # recorded while deferred, not raised yet

    def __enter__(self) -> "RunSignals":
        if threading.current_thread() is threading.main_thread():
            for s in HANDLED:
                self._old[s] = signal.signal(s, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.raised is not None:
            return  # already unwinding from an earlier signal: never interrupt that
        if self._depth_deferred:
            self.pending = self.pending or signum  # restoring: raise it afterwards
            return
        self.raised = signum
        raise _exception(signum)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Signals arriving inside are recorded, not raised; after a normal exit, the first
        one recorded is raised (a run that was finishing still stops)."""
        self._depth_deferred += 1
        raised = True
        try:
            yield
            raised = False
        finally:
            self._depth_deferred -= 1
        if not raised and self._depth_deferred == 0 and self.pending is not None and self.raised is None:
            self.raised, self.pending = self.pending, None
            raise _exception(self.raised)

    def __exit__(self, *exc: Any) -> bool:
        stopping = self.raised is not None or self.pending is not None
        for s, h in self._old.items():
            if stopping and h in (signal.SIG_DFL, None, signal.default_int_handler):
                # the process is unwinding from a signal to its exit: a repeated SIGTERM must not
                # turn the orderly exit (status 130, the message) into a kill, nor a repeated
                # SIGINT raise a second KeyboardInterrupt into the handler that prints it (the
                # CLI ignores SIGINT only once that handler runs). SIG_IGN, not a Python no-op,
                # which interpreter shutdown resets to the fatal default; the runner starts no
                # child after it was stopped (a library caller that goes on can put its own
                # handler back).
                h = signal.SIG_IGN
            signal.signal(s, h)
        return False


def _exception(signum: int) -> KeyboardInterrupt:
    if signum == signal.SIGINT:
        return KeyboardInterrupt()
    return Terminated(f"signal {signal.Signals(signum).name}")
