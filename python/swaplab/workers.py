"""Process pools that Ctrl-C stops at any moment, also while the pool is being built.

Pool workers ignore SIGINT: Ctrl-C belongs to the parent, which terminates the pool. But a
terminal's Ctrl-C goes to the whole process group, and a worker forked while SIGINT can be
delivered may receive it before its initializer ignores it. The KeyboardInterrupt then unwinds
the parent's stack that the fork copied into the worker: the worker prints "interrupted" and
runs the parent's exit handlers as if it were the program, and the parent's pool waits for it
forever (a hang after Ctrl-C). A Ctrl-C reaching the parent while ``Pool()`` is half built is
no better: ``Pool.__init__`` cleans up only after an ``Exception``, and the caller has no pool
object to terminate yet.

So SIGINT is blocked while the pool is built. Workers are born with it blocked (a forked child
inherits the signal mask; forks made later by the pool's own thread inherit it from that
thread, created while it was blocked), ignore it, and only then unblock it. The parent unblocks
it once it holds the pool inside the block that terminates it: a Ctrl-C held meanwhile is
raised there. The pool's helper threads keep SIGINT blocked, so it is always the main thread
that the kernel interrupts.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import sys
import threading
from typing import Any, Callable, Iterable, Iterator, Optional

_SIGINT = {signal.SIGINT}


def _block_sigint() -> Optional[Any]:
    """Block SIGINT in this thread; the previous mask, or None where that is not possible."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _SIGINT)


def _restore(mask: Optional[Any]) -> None:
    """Restore the mask; a SIGINT that arrived while it was blocked raises KeyboardInterrupt here."""
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _start_worker(initializer: Optional[Callable[[], None]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGINT)
    if initializer is not None:
        initializer()


def imap_unordered(func: Callable[[Any], Any], tasks: Iterable[Any], processes: int,
                   initializer: Optional[Callable[[], None]] = None) -> Iterator[Any]:
    """``func(task)`` for every task in a pool of ``processes`` workers (forked on Linux), one
    task at a time, results in completion order. Workers ignore SIGINT; a KeyboardInterrupt in
    the caller, or closing this generator early, terminates the pool."""
    ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    mask = _block_sigint()
    try:
        pool = ctx.Pool(processes, initializer=_start_worker, initargs=(initializer,))
    except BaseException:
        _restore(mask)
        raise
    clean = False
    try:
        _restore(mask)
        yield from pool.imap_unordered(func, tasks, chunksize=1)
        pool.close()
        clean = True
    finally:
        if not clean:
            pool.terminate()
        pool.join()
