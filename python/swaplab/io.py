"""Writing result files: atomically, so that a failed or interrupted run never leaves a
half-written file and never clobbers the previous one."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Union

PathLike = Union[str, "os.PathLike[str]"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: PathLike, data: Union[str, bytes], durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which is flushed, fsynced and then
    renamed over ``path`` (``os.replace``), and the directory is fsynced. Readers see either the
    old file or the complete new one; on any failure (including KeyboardInterrupt) the temporary
    file is removed and ``path`` is untouched.

    ``durable=False`` skips both fsyncs (two disk flushes, milliseconds each): the rename is
    still atomic for every process, and only a power loss or kernel crash before the data
    reaches the disk could leave a torn file — for writers that detect torn files themselves
    (the results store's records end with a known trailer) and flush once at the end.
    """
    path = os.fspath(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if not durable:
        return
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def write_json_atomic(path: PathLike, obj: Any, indent: int = 2) -> None:
    """Serialize ``obj`` as JSON (with a trailing newline) and write it atomically."""
    write_atomic(path, json.dumps(obj, indent=indent, allow_nan=False) + "\n")


def check_writable(path: PathLike) -> None:
    """Fail early (before a long run) when ``path`` cannot be written. Its directory is
    created if missing. Raises ``OSError`` with a readable message."""
    directory = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(directory):
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise OSError(f"{path}: cannot create directory {directory}: {e.strerror or e}") from None
    if not os.access(directory, os.W_OK):
        raise PermissionError(f"{path}: directory {directory} is not writable")
    if os.path.isdir(os.fspath(path)):
        raise IsADirectoryError(f"{path}: is a directory")
