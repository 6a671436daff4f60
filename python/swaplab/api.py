"""The Python API: run a workload (a file or a dict) through the simulator."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import _core, tomlio
from ._core import ConfigError
from .result import Result

Workload = Union[str, "os.PathLike[str]", Mapping[str, Any]]
Overrides = Union[None, Iterable[str], Mapping[str, Any]]
ProgressFn = Callable[[int, float], Any]


def toml_value(value: Any) -> str:
    """A Python value written as a TOML value (``"3.14"`` -> ``'"3.14"'``, True -> ``true``)."""
    try:
        return tomlio.value(value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"<overrides>: cannot write {value!r} as a TOML value: {e}") from None


def load_workload(workload: Workload) -> Tuple[str, str]:
    """(TOML text, source name) of a workload given as a path or a dict."""
    if isinstance(workload, Mapping):
        try:
            return tomlio.dumps(workload), "<dict>"
        except (TypeError, ValueError) as e:
            raise ConfigError(f"<dict>: cannot be written as TOML: {e}") from None
    path = os.fspath(workload)
    with open(path, encoding="utf-8") as f:
        return f.read(), path


def make_overrides(overrides: Overrides = None, **kw: Any) -> List[str]:
    """``key=value`` strings for the core from a list of strings, a dict, and keyword
    arguments whose ``__`` stands for a dot (``kernel__page_cluster=0``)."""
    out: List[str] = []
    if overrides is None:
        pass
    elif isinstance(overrides, Mapping):
        out += [f"{k}={toml_value(v)}" for k, v in overrides.items()]
    elif isinstance(overrides, str):
        out.append(overrides)
    else:
        out += [str(o) for o in overrides]
    out += [f"{k.replace('__', '.')}={toml_value(v)}" for k, v in kw.items()]
    return out


def resolve(workload: Workload, overrides: Overrides = None, **kw: Any) -> Dict[str, Any]:
    """Parse and validate a workload; the fully resolved configuration as a dict."""
    import json

    text, source = load_workload(workload)
    return json.loads(_core.resolve(text, source, expand_presets(text, source, make_overrides(overrides, **kw))))


class _SigintFlag:
    """While a simulation runs, SIGINT sets a flag (the core polls it through the progress
    callback and stops) instead of raising inside the extension."""

    def __init__(self) -> None:
        self.hit = False
        self._old: Any = None
        self._installed = False

    def __enter__(self) -> "_SigintFlag":
        if threading.current_thread() is threading.main_thread():
            try:
                self._old = signal.signal(signal.SIGINT, self._handler)
                self._installed = True
            except ValueError:
                pass
        return self

    def _handler(self, signum: int, frame: Any) -> None:
        self.hit = True

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._old)


def expand_presets(text: str, source: str, overrides: List[str]) -> List[str]:
    """Resolve ``device = "calibrated:NAME"`` (a preset written by ``swaplab calibrate``) into
    overrides the core accepts; other workloads are returned unchanged."""
    if "calibrated:" not in text and not any("calibrated:" in o for o in overrides):
        return list(overrides)
    from .host.calibrate import expand_calibrated

    try:
        return expand_calibrated(text, list(overrides))
    except OSError as e:
        raise ConfigError(f"{source}: calibrated device preset: {e.strerror or e}: "
                          f"{getattr(e, 'filename', '') or ''} (run `swaplab calibrate --name NAME` first)") from None
    except (KeyError, ValueError) as e:
        raise ConfigError(f"{source}: calibrated device preset: {e}") from None


def simulate_text(text: str, source: str, overrides: List[str], progress: Optional[ProgressFn] = None) -> Result:
    """Run the simulator on TOML text. ``progress(virtual_ns, fraction)`` is called about five
    times per wall second; returning ``False`` stops the run early (the result is then marked
    ``interrupted``). Ctrl-C stops the run and raises ``KeyboardInterrupt``."""
    import json

    overrides = expand_presets(text, source, overrides)
    with _SigintFlag() as sigint:
        def callback(virtual_ns: int, fraction: float) -> bool:
            if sigint.hit:
                return False
            if progress is not None:
                return progress(virtual_ns, fraction) is not False
            return True

        out = _core.simulate(text, source, overrides, callback)
    if sigint.hit:
        raise KeyboardInterrupt
    return Result(json.loads(out))


def simulate(workload: Workload, overrides: Overrides = None, *, progress: Optional[ProgressFn] = None,
             **kw: Any) -> Result:
    """Simulate a workload given as a TOML file path or a dict.

    ``overrides`` are ``key=value`` strings (as ``swaplab run --set``) or a dict of dotted keys;
    keyword arguments add more, with ``__`` for the dot::

        r = swaplab.simulate("examples/quick.toml", kernel__page_cluster=0)
        r.tasks[["name", "elapsed_s", "fault_p99"]]

    Raises ``swaplab.ConfigError`` for a workload the simulator cannot accept.
    """
    text, source = load_workload(workload)
    return simulate_text(text, source, make_overrides(overrides, **kw), progress)
