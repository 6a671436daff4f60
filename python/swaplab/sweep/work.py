"""What a worker does with one point: run the simulator and hand back its JSON text.

The same function runs in a local pool process, in a Ray worker on another machine, or in the
sweep's own process (``--jobs 1``). It never raises for a point's own failure: a configuration
the simulator refuses, or any other error (a panic inside the core included), comes back as an
error string so that one bad point cannot stop a sweep. The result text is returned as the
simulator wrote it, so a result is byte-identical whichever engine ran it.
"""

from __future__ import annotations

import time
from typing import Any, Callable, List, Optional, Tuple

# (result JSON, error, wall seconds, CPU seconds of the worker, swaplab version of the worker)
Outcome = Tuple[Optional[str], Optional[str], float, float, str]


def simulate_point(text: str, source: str, overrides: List[str],
                   callback: Optional[Callable[[int, float], bool]] = None) -> Outcome:
    from .. import _core

    t0, c0 = time.perf_counter(), time.process_time()

    def done(out: Optional[str], err: Optional[str]) -> Outcome:
        return out, err, time.perf_counter() - t0, time.process_time() - c0, _core.version()

    try:
        out = _core.simulate(text, source, list(overrides), callback)
    except (KeyboardInterrupt, SystemExit):
        raise
    except _core.ConfigError as e:
        return done(None, " ".join(str(e).split()))
    except BaseException as e:  # noqa: BLE001 - pyo3 panics derive from BaseException
        return done(None, f"{type(e).__name__}: {' '.join(str(e).split())}")
    return done(out, None)


def simulate_here(text: str, source: str, overrides: List[str], stop: Any) -> Outcome:
    """In the sweep's own process: ``stop()`` is polled by the core (about five times a wall
    second) so that Ctrl-C ends a long point promptly; an interrupted result is not kept."""
    out = simulate_point(text, source, overrides, lambda ns, frac: not stop())
    if stop():
        raise KeyboardInterrupt
    return out
