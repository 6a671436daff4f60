"""The sweep's progress line on stderr: done, running, failed, cached, ETA.

On a terminal one line is redrawn (at most ten times a second); in a log (CI) a line is written
every tenth of the sweep or every thirty seconds, whichever comes first.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Optional


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class SweepProgress:
    def __init__(self, name: str, to_run: int, cached: int, jobs: int, enabled: bool = True,
                 stream: Any = None):
        self.name, self.to_run, self.cached, self.jobs = name, to_run, cached, jobs
        self.done = self.failed = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and to_run > 0
        self.tty = self.enabled and self.stream.isatty()
        self.t0 = time.monotonic()
        self._last_draw = 0.0
        self._last_log_done = 0
        self._last_log_t = self.t0
        self._drawn = False

    def update(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        if self.enabled:
            self._draw()

    def eta(self) -> Optional[float]:
        if not self.done:
            return None
        elapsed = time.monotonic() - self.t0
        return elapsed / self.done * (self.to_run - self.done)

    def line(self) -> str:
        running = min(self.jobs, self.to_run - self.done)
        eta = self.eta()
        frac = self.done / self.to_run if self.to_run else 1.0
        fill = int(frac * 24)
        return (f"sweep {self.name} [{'#' * fill}{'.' * (24 - fill)}] {self.done}/{self.to_run} done, "
                f"{running} running, {self.failed} failed, {self.cached} cached, "
                f"ETA {_clock(eta) if eta is not None else '?'}")

    def _draw(self) -> None:
        now = time.monotonic()
        finished = self.done == self.to_run
        if self.tty:
            if finished or now - self._last_draw >= 0.1:
                self.stream.write("\r" + self.line() + "\x1b[K")
                self.stream.flush()
                self._last_draw, self._drawn = now, True
            return
        step = max(1, self.to_run // 10)
        if finished or self.done - self._last_log_done >= step or now - self._last_log_t >= 30:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self._last_log_done, self._last_log_t = self.done, now

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
