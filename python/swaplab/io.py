"""Writing result files safely: atomically, and only ever onto a regular file or a new path.

swaplab runs as root (the host runner needs it), so ``--json PATH`` must never replace what
is not a result file: a device node (``--json /dev/null`` as root would replace /dev/null by
a regular file), a FIFO, a socket, a directory, or a symlink (whose target would be silently
detached). :func:`check_output` refuses those before a run starts, and :func:`write_atomic`
checks again just before its rename, because the path may have changed during a long run.

A write goes to a hidden temporary file beside the target (``.NAME.XXXX.tmp``), is fsynced,
then renamed over the target; readers see the old file or the complete new one. A process
killed with SIGKILL cannot remove its temporary file, so :func:`check_output` removes such
leftovers of the same target: their name carries the writer's pid, and a file whose writer
is gone is removed.

Errors are ``ConfigError`` subclasses (a ``ValueError``), like every user mistake swaplab
reports: the CLI prints them as one line and exits 2.
"""

from __future__ import annotations

import glob
import json
import os
import stat
import tempfile
from typing import Any, Optional, Union

from ._core import ConfigError

PathLike = Union[str, "os.PathLike[str]"]


class OutputError(ConfigError):
    """An output path swaplab refuses to write (a user's mistake: exit 2)."""


class InputError(ConfigError):
    """An input file swaplab cannot read as text (a user's mistake: exit 2)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _describe(mode: int) -> Optional[str]:
    """What a non-regular file is, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISLNK, "a symbolic link (swaplab does not replace links; give the target's path)"),
                       (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _refuse_non_regular(path: str) -> None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return  # a new path (a parent that is not a directory is reported by check_output)
    except OSError as e:
        raise OutputError(f"{path}: {e.strerror or e}") from None
    what = _describe(st.st_mode)
    if what:
        raise OutputError(f"{path}: is {what}: results are written only to a regular file or a new path")


def _tmp_prefix(path: str) -> str:
    return f".{os.path.basename(path)}.{os.getpid()}-"


def _remove_stale_tmp(path: str) -> None:
    """Remove temporary files of ``path`` whose writer (the pid in their name) is gone."""
    directory = os.path.dirname(os.path.abspath(path))
    prefix = f".{os.path.basename(path)}."
    pattern = os.path.join(glob.escape(directory), glob.escape(prefix) + "*-*.tmp")
    for tmp in glob.glob(pattern):
        pid = os.path.basename(tmp)[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or os.path.exists(f"/proc/{pid}") or not os.path.isdir("/proc/self"):
            continue
        try:
            if stat.S_ISREG(os.lstat(tmp).st_mode):
                os.unlink(tmp)
        except OSError:
            pass


def check_output(path: PathLike, what: str = "output") -> Optional[str]:
    """Refuse (OutputError) an output path before a long run: empty, not a regular file, in a
    directory where no file can be created (e.g. /proc). A missing directory is created;
    the return value then says so (a note for the user), else None."""
    path = os.fspath(path)
    if not path.strip():
        raise OutputError(f"{what}: an empty path: name the file to write")
    _refuse_non_regular(path)
    directory = os.path.dirname(os.path.abspath(path))
    note = None
    if not os.path.isdir(directory):
        if os.path.lexists(directory):
            raise OutputError(f"{path}: cannot create directory {directory}: a file of that name is in the way")
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{path}: cannot create directory {directory}: {e.strerror or e}") from None
        note = f"created directory {directory} for {path}"
    try:
        fd, probe = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=".tmp", dir=directory)
    except OSError as e:
        raise OutputError(f"{path}: cannot create a file in {directory}: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)
    _remove_stale_tmp(path)
    return note


def write_atomic(path: PathLike, data: Union[str, bytes], durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which is flushed, fsynced and then
    renamed over ``path`` (``os.replace``), and the directory is fsynced. Readers see either the
    old file or the complete new one; on any failure (including KeyboardInterrupt) the temporary
    file is removed and ``path`` is untouched. Raises OutputError when ``path`` is not a
    regular file or a new path (a device, FIFO, socket, directory or symlink).

    ``durable=False`` skips both fsyncs (two disk flushes, milliseconds each): the rename is
    still atomic for every process, and only a power loss or kernel crash before the data
    reaches the disk could leave a torn file — for writers that detect torn files themselves
    (the results store's records end with a known trailer) and flush once at the end.
    """
    path = os.fspath(path)
    if not path.strip():
        raise OutputError("an empty output path: name the file to write")
    if isinstance(data, str):
        data = data.encode("utf-8")
    _refuse_non_regular(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        _refuse_non_regular(path)  # again: the path may have changed while we wrote
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


def write_all_atomic(files: "list[tuple[PathLike, Union[str, bytes]]]") -> Optional[str]:
    """Write several result files (a report and its plots) as one step that Ctrl-C cannot cut
    in half: everything is rendered before this is called, and SIGINT/SIGTERM arriving during
    the writes (milliseconds) are held until all files are in place. Returns a note when such
    a signal arrived (the files are complete; the caller says so)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        for path, data in files:
            write_atomic(path, data)
        return None
    got: list = []
    handled = (signal.SIGINT, signal.SIGTERM)
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in handled}
    try:
        for path, data in files:
            write_atomic(path, data)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if got:
        return f"{signal.Signals(got[0]).name} arrived while the results were being written; they are complete"
    return None


def write_json_atomic(path: PathLike, obj: Any, indent: int = 2) -> None:
    """Serialize ``obj`` as JSON (with a trailing newline) and write it atomically."""
    write_atomic(path, json.dumps(obj, indent=indent, allow_nan=False) + "\n")


def read_text_limited(path: PathLike, limit: int, what: str = "file") -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes. Raises ``InputError`` for a FIFO, device or directory (reading /dev/zero would never end), a file
    that is too large or not UTF-8 text, with a one-line message naming the file."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: is {_describe(st.st_mode)}: expected a regular {what}")
        if st.st_size > limit:
            raise InputError(f"{path}: {st.st_size} bytes: a {what} is at most {limit} bytes")
        chunks = []
        total = 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            total += len(b)
            if total > limit:
                raise InputError(f"{path}: more than {limit} bytes: a {what} is at most {limit} bytes")
            chunks.append(b)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}): "
                         f"expected a TOML {what}") from None
