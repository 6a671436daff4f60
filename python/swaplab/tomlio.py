"""Writing workload documents as TOML.

Tables are always written as ``[table]`` headers and lists of tables as ``[[array]]`` blocks
(never as inline tables), so that the text looks like a hand-written workload file and
``--set task.0.phase.0.pattern=random`` style overrides can address every element. Values are
formatted by tomli_w.
"""

from __future__ import annotations

import re
from typing import Any, List, Mapping

import tomli_w

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _quote(k: str) -> str:
    return k if _BARE.match(k) else '"' + k.replace("\\", "\\\\").replace('"', '\\"') + '"'


def value(v: Any) -> str:
    """One TOML value (a scalar, an array or an inline table) on one line."""
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_quote(k)} = {value(x)}" for k, x in v.items()) + " }"
    text = tomli_w.dumps({"v": v})
    rhs = text.split("=", 1)[1].strip()
    if "\n" in rhs:
        # tomli_w splits long arrays over lines; join them back (arrays may span lines in TOML,
        # but one line keeps override values simple).
        rhs = " ".join(part.strip() for part in rhs.splitlines())
        rhs = rhs.replace("[ ", "[").replace(", ]", "]").replace(",]", "]")
    return rhs


def _is_aot(v: Any) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(isinstance(x, Mapping) for x in v)


def _emit(d: Mapping[str, Any], path: List[str], out: List[str]) -> None:
    for k, v in d.items():
        if isinstance(v, Mapping) or _is_aot(v):
            continue
        if v is None:
            raise TypeError(f"{'.'.join(path + [str(k)])}: None has no TOML representation")
        out.append(f"{_quote(k)} = {value(v)}")
    for k, v in d.items():
        if isinstance(v, Mapping):
            name = ".".join(_quote(p) for p in path + [k])
            out.extend(["", f"[{name}]"])
            _emit(v, path + [k], out)
    for k, v in d.items():
        if _is_aot(v):
            name = ".".join(_quote(p) for p in path + [k])
            for item in v:
                out.extend(["", f"[[{name}]]"])
                _emit(item, path + [k], out)


def dumps(doc: Mapping[str, Any]) -> str:
    """A workload document (nested dicts and lists) as TOML text."""
    if not isinstance(doc, Mapping):
        raise TypeError(f"a workload must be a table (dict), got {type(doc).__name__}")
    for k in doc:
        if not isinstance(k, str):
            raise TypeError(f"TOML keys must be strings, got {k!r}")
    out: List[str] = []
    _emit(doc, [], out)
    return "\n".join(out).lstrip("\n") + "\n"
