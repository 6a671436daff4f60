"""One task instance on real memory: ``python -m swaplab.host.worker PARENT_PID``.

Protocol (JSON lines; stdin from the orchestrator, stdout to it):

1. in:  ``{"text", "source", "overrides", "task", "instance", "workdir", "fault_threshold_ns"}``
2. out: ``{"ready": true, "pid": N, "pages": P}`` — mappings exist, nothing touched yet; the
   orchestrator now moves this process into the memory cgroup;
3. in:  ``{"go": T0}`` (CLOCK_MONOTONIC ns): the program runs (native code, swaplab-host);
4. out: the task's stats; the process then keeps its memory until stdin closes, so that the
   orchestrator can read the cgroup's final state.

Errors are reported as ``{"error": "..."}``. The worker ignores SIGINT (the orchestrator owns
Ctrl-C) and dies with its parent (PR_SET_PDEATHSIG).
"""

import json
import os
import signal
import sys


def _send(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from swaplab import _core

    _core.host_die_with_parent()
    if len(sys.argv) > 1 and os.getppid() != int(sys.argv[1]):
        return 3  # the orchestrator is already gone
    try:
        spec = json.loads(sys.stdin.readline())
        w = _core.HostWorker(spec["text"], spec["source"], spec["overrides"], spec["task"], spec["instance"],
                             spec["workdir"], spec.get("fault_threshold_ns", 1000))
    except Exception as e:  # report, do not trace back: the orchestrator prints it
        _send({"error": f"{type(e).__name__}: {e}"})
        return 2
    _send({"ready": True, "pid": os.getpid(), "pages": w.mapped_pages()})
    line = sys.stdin.readline()
    if not line:
        return 0
    go = json.loads(line)["go"]
    sys.stdout.write(w.run(int(go)) + "\n")
    sys.stdout.flush()
    sys.stdin.read()  # hold the memory until released
    del w
    return 0


if __name__ == "__main__":
    sys.exit(main())
