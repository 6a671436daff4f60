"""The Python API: run a workload (a file or a dict) through the simulator.

Every user mistake raises ``ConfigError`` (a ``ValueError``) with the one-line message the
CLI prints: a missing, unreadable, non-regular, oversized or non-UTF-8 workload file, a dict
that cannot be written as TOML, text that cannot be passed to the simulator, and everything
the parser and validator reject. A ``progress`` callback's own exception propagates as is.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import _core, tomlio
from ._core import ConfigError
from .result import Result

Workload = Union[str, "os.PathLike[str]", Mapping[str, Any]]
# A workload file is a few KiB; this bounds what a mistaken path (a log, an image) costs.
MAX_WORKLOAD_BYTES = 16 << 20
Overrides = Union[None, Iterable[str], Mapping[str, Any]]
ProgressFn = Callable[[int, float], Any]


def toml_value(value: Any) -> str:
    """A Python value written as a TOML value (``"3.14"`` -> ``'"3.14"'``, True -> ``true``)."""
    try:
        return tomlio.value(value)
    except (TypeError, ValueError, RecursionError) as e:
        raise ConfigError(f"<overrides>: cannot write {_short(repr(value))} as a TOML value: {_short(e)}") from None


def load_workload(workload: Workload) -> Tuple[str, str]:
    """(TOML text, source name) of a workload given as a path or a dict."""
    from .io import read_text_limited

    if isinstance(workload, Mapping):
        try:
            return tomlio.dumps(workload), "<dict>"
        except (TypeError, ValueError, RecursionError) as e:
            raise ConfigError(f"<dict>: cannot be written as TOML: {_short(e)}") from None
    try:
        path = os.fspath(workload)
    except TypeError:
        raise ConfigError(f"a workload is a path or a dict, got {type(workload).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise ConfigError("an empty workload path: name a TOML file")
    return read_text_limited(path, MAX_WORKLOAD_BYTES, "workload file"), path


def _short(e: BaseException) -> str:
    msg = " ".join(str(e).split()) or type(e).__name__
    return msg if len(msg) <= 300 else msg[:300] + "..."


def _checked(text: str, source: str, overrides: List[str]) -> None:
    """Strings the core can take: no lone surrogates (they have no UTF-8 form)."""
    for what, s in [("the workload", text), ("the source name", source)] + [(f"override {o!r}", o) for o in overrides]:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ConfigError(f"{source if what != 'the source name' else '<source>'}: {what} holds a character with no "
                              f"UTF-8 form ({s[e.start:e.end]!r} at position {e.start})") from None


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
        try:
            items = list(overrides)
        except TypeError:
            raise ConfigError(f"overrides are key=value strings or a dict, got {type(overrides).__name__}") from None
        for o in items:
            if not isinstance(o, str):
                raise ConfigError(f"an override is a key=value string, got {o!r}")
            out.append(o)
    out += [f"{k.replace('__', '.')}={toml_value(v)}" for k, v in kw.items()]
    return out


def resolve(workload: Workload, overrides: Overrides = None, **kw: Any) -> Dict[str, Any]:
    """Parse and validate a workload; the fully resolved configuration as a dict."""
    import json

    text, source = load_workload(workload)
    overrides = make_overrides(overrides, **kw)
    _checked(text, source, overrides)
    return json.loads(_core.resolve(text, source, overrides))


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


def simulate_text(text: str, source: str, overrides: List[str], progress: Optional[ProgressFn] = None) -> Result:
    """Run the simulator on TOML text. ``progress(virtual_ns, fraction)`` is called about five
    times per wall second; returning ``False`` stops the run early (the result is then marked
    ``interrupted``). Ctrl-C stops the run and raises ``KeyboardInterrupt``."""
    import json

    _checked(text, source, overrides)
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
