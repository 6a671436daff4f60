"""``swaplab calibrate``'s TLB-flush phase: what one TLB-flush IPI costs on this machine.

Reclaim's batched flush interrupts every CPU that may hold a translation it removed (and on
x86 from 6.12 every CPU running a user task, ``kernel.lazy_mm_cpumask``): the model charges
the sender ``tlb_shootdown_ns`` plus ``tlb_shootdown_per_cpu_ns`` per CPU and each
interrupted CPU ``tlb_ipi_receive_ns`` (crates/core/src/reclaim/tlb_flush.rs). The defaults
are bare-metal estimates; in a VM sending an IPI is an exit to the hypervisor, and stop 27's
``perf`` of four swapping processes on the project's VM put ~14 us of the sender's CPU on each.

The probe (crates/host/src/tlb_probe.rs) flushes one page of this process's mm while a
thread of it spins on another CPU, against the same loop in a forked child that interrupts
no one, and counts the IPIs in /proc/interrupts. With two CPUs it sees one target, so the
fit keeps the per-target default and gives the rest of the sender's cost per IPI to
``tlb_shootdown_ns``. Where the probe does not apply (one CPU, or an architecture without
TLB-flush IPIs) the preset keeps the defaults.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Optional

from .. import _core


def fit(measured: Dict[str, Any], per_cpu_ns: int) -> Dict[str, int]:
    """Probe report -> cost parameters. The sender's cost per IPI is the model's once-per-flush
    figure plus its per-target figure for the one target; the receiver's is the peer's lost
    time per IPI, absent when the peer was never on its CPU for a whole phase."""
    costs = {"tlb_shootdown_ns": max(0, int(round(measured["initiator_ns"] - per_cpu_ns)))}
    if measured.get("receiver_ns") is not None:
        costs["tlb_ipi_receive_ns"] = max(0, int(round(measured["receiver_ns"])))
    return costs


def default_per_cpu_ns() -> int:
    """The model's default ``tlb_shootdown_per_cpu_ns`` (what a workload that sets nothing gets)."""
    from .swapin_cost import workload

    resolved = json.loads(_core.resolve(workload(2, 1 << 30), "<defaults>", []))
    return int(resolved["costs"]["tlb_shootdown_per_cpu_ns"])


def calibrate(quick: bool = False, log: Optional[Callable[[str], None]] = None) -> Optional[Dict[str, Any]]:
    """Runs the probe; {"measured": report, "fit": costs}, or None where it does not apply."""
    try:
        report = _core.host_calibrate_tlb(5000 if quick else 20000, 4 if quick else 8)
    except OSError as e:  # a CPU went offline, /proc/interrupts unreadable: keep the defaults
        if log:
            log(f"TLB-flush IPIs: the probe failed ({e}); defaults kept")
        return None
    if report is None:
        if log:
            log("TLB-flush IPIs: not measurable here (one CPU, or no TLB-flush IPIs); defaults kept")
        return None
    measured = json.loads(report)
    costs = fit(measured, default_per_cpu_ns())
    if log:
        receive = costs.get("tlb_ipi_receive_ns")
        log(f"TLB-flush IPI: sender {measured['initiator_ns'] / 1000:.1f} us, interrupted CPU "
            + (f"{receive / 1000:.1f} us" if receive is not None else "not measured (peer off its CPU)"))
    return {"measured": measured, "fit": costs}
