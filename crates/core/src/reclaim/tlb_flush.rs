//! TLB shootdown after reclaim unmaps a page: the IPIs to the other CPUs running the page's
//! address space, what they cost the reclaimer and what they cost the CPUs they interrupt.
//!
//! When `try_to_unmap_one` clears a PTE, every CPU that may cache the translation must drop
//! it before the page is freed or written out. On x86 that is an inter-processor interrupt
//! to each CPU in the mm's `mm_cpumask` (the CPUs running the process now) and a wait until
//! every one of them has flushed (`flush_tlb_multi`, `smp_call_function_many_cond` with
//! `wait`). A process of one thread is seen by one CPU at a time; a process of 36 threads
//! (memcached `-t 36`, config `threads`) by up to 36, and each flush interrupts all of them.
//!
//! Per era and architecture (the model's eras; `machine.arch`):
//! * x86, 4.3+ (the 4.14 and 6.x profiles; Mel Gorman, "mm: send one IPI per CPU to TLB flush
//!   all entries after unmapping pages", 4.3): `shrink_folio_list` unmaps with
//!   `TTU_BATCH_FLUSH`. `should_defer_flush` defers when another CPU is in the mm's cpumask;
//!   `set_tlb_ubc_flush_pending` ORs that cpumask into the reclaimer's `tlbflush_unmap_batch`
//!   and notes `writable` when the cleared PTE was dirty. The batch is flushed by
//!   `try_to_unmap_flush_dirty` before a dirty folio is written out (only if a writable entry
//!   is pending: a CPU must not write the page while it is under I/O) and by
//!   `try_to_unmap_flush` at the end of `shrink_folio_list`, before the folios are freed: one
//!   IPI per CPU per batch, however many pages. So how many pages a batch reclaims sets how
//!   many flushes a reclaimed page costs: the classic LRU's batches of 32 isolated pages
//!   reclaim few when most are referenced; MGLRU's reclaim most of theirs. A batch whose
//!   folios all had dirty PTEs (anonymous memory written since it was last swapped in)
//!   flushes before every write-out, once per page, in 5.17 as in 6.x (mm/vmscan.c calls
//!   `try_to_unmap_flush_dirty` right before `pageout`).
//! * x86 before 4.3 (the 2.6.28 and 3.14 profiles): `ptep_clear_flush` flushes at once, the
//!   IPIs sent while the PTE lock is held. The model flushes once per folio unmapped (a folio
//!   mapped in several mms would flush once per mm in the kernel).
//! * arm64 before 6.5 (the posting of seed 004's client profile ran 5.17 on a Snapdragon
//!   7c): no `ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH`, so `should_defer_flush` is false and
//!   `try_to_unmap_one` clears every PTE with `ptep_clear_flush` → `flush_tlb_page`:
//!   `TLBI VALE1IS`, which the hardware broadcasts to every CPU of the inner-shareable domain
//!   (no IPI, no handler on the other CPUs), then `DSB ISH`, the wait until all have done it
//!   (arch/arm64/include/asm/tlbflush.h). One wait per PTE cleared, whether or not the mm
//!   runs anywhere else: the posted 5.17-rc2 kswapd profile has `ptep_clear_flush` (1.65%)
//!   and no IPI function.
//! * arm64 6.5+ (Barry Song, Yicong Yang, "arm64: support batched/deferred tlb shootdown
//!   during page reclamation/migration"): `arch_tlbbatch_should_defer` is true, each cleared
//!   PTE only issues its TLBI (`arch_tlbbatch_add_pending`, its cost is in `unmap_ns`) and
//!   `arch_tlbbatch_flush` is one `DSB ISH` for the batch, at the same two points as x86's.
//!
//! Not a flush: clearing the accessed bit. x86's `ptep_clear_flush_young` only clears the bit
//! since 3.18 ("clearing the accessed bit without a TLB flush doesn't cause data
//! corruption", arch/x86/mm/pgtable.c), so `folio_referenced` sends no IPI in 4.14 and 6.x,
//! nor does MGLRU's page-table walk or look-around (`ptep_test_and_clear_young`). Before 3.18
//! it flushed when the bit was set; the model does not charge that for 2.6.28 and 3.14.
//! arm64's `ptep_clear_flush_young` issues a young entry's TLBI without the `DSB`
//! (`flush_tlb_page_nosync`): no wait, not charged.
//!
//! Which CPUs: those whose running task is in the mm when the PTE is cleared, less the
//! reclaimer's own (its local flush is part of `unmap_ns`); an idle CPU is in lazy TLB mode
//! and `tlb_is_not_lazy` spares it. A CPU in the batch's mask that has switched to another
//! task since is interrupted all the same (the kernel's mask is a snapshot too).
//!
//! x86 6.12+ (`kernel.lazy_mm_cpumask`; "x86/mm/tlb: Update mm_cpumask lazily"): a CPU stays
//! in the mask of every mm it has run, and is trimmed only by a flush that names the mm, at
//! most once a second (`should_trim_cpumask`, from `flush_tlb_mm_range`; reclaim never names
//! one). Reclaim's `arch_tlbbatch_flush` builds its `flush_tlb_info` with no mm, so
//! `should_flush_tlb` IPIs every CPU of the batch's mask that is not lazy, whatever process
//! it runs: a CPU running a user task is interrupted, one idle or in a kernel thread (kswapd)
//! is not. Several single-threaded processes migrating over a few CPUs soon have every CPU
//! in every mask: each batch flush interrupts every other busy CPU (on this project's VM a
//! third of such a workload's task CPU, docs/evidence/host-procs.md).
//!
//! Costs (named parameters in `Costs`, with their sources there): the reclaimer pays
//! `tlb_shootdown_ns` per flush that interrupts anyone, plus `tlb_shootdown_per_cpu_ns` per
//! CPU interrupted, in its `tlb_shootdown` category; each interrupted CPU's running task
//! pays `tlb_ipi_receive_ns` on its clock (the handler runs in its time, as interrupts do).
//! On arm64 the reclaimer pays `tlb_broadcast_flush_ns` per `DSB ISH` wait, in the same
//! category, and no other CPU's task pays anything. Counted in `TlbFlushStats` and
//! `summary.tlb_*`.
//!
//! Not modelled: the page-table lock held across the flush before 4.3, lazy-TLB CPUs that
//! still receive an IPI when page tables are freed, PCID's deferred flushes of inactive mms
//! (4.14+ x86 with PCID invalidates an mm another CPU ran earlier when it switches back).

use crate::config::{arm64_batched_unmap_flush, Arch, Profile, Resolved};
use crate::engine::{Sim, TaskKind};
use crate::stats::{CpuCategory, CpuCost};

/// How the kernel of this machine flushes other CPUs' TLBs after reclaim clears PTEs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlushMode {
    /// x86 4.3+: IPIs to the batch's CPUs at `try_to_unmap_flush(_dirty)`.
    #[default]
    X86Batched,
    /// x86 before 4.3: IPIs right after each folio's unmap.
    X86Immediate,
    /// arm64 before 6.5: a broadcast TLBI and its `DSB ISH` wait per PTE cleared.
    Arm64Immediate,
    /// arm64 6.5+: a TLBI per PTE cleared, one `DSB ISH` wait per batch flush.
    Arm64Batched,
}

impl FlushMode {
    pub fn of(cfg: &Resolved) -> FlushMode {
        let profile = &cfg.config.kernel.profile;
        match cfg.config.machine.arch {
            Arch::X86_64 if Profile::parse(profile).is_some_and(|p| p >= Profile::V4_14) => FlushMode::X86Batched,
            Arch::X86_64 => FlushMode::X86Immediate,
            Arch::Arm64 if arm64_batched_unmap_flush(profile) => FlushMode::Arm64Batched,
            Arch::Arm64 => FlushMode::Arm64Immediate,
        }
    }

    fn batched(self) -> bool {
        matches!(self, FlushMode::X86Batched | FlushMode::Arm64Batched)
    }
}

/// Flushes that interrupted other CPUs, the IPIs sent, arm64's broadcast waits, and the CPU
/// time on each side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbFlushStats {
    pub shootdowns: u64,
    pub ipis: u64,
    /// arm64: `DSB ISH` waits for broadcast TLB invalidations.
    pub broadcast_waits: u64,
    /// Reclaimers' time sending IPIs and waiting for the acks (the `tlb_shootdown` category).
    pub initiator_ns: u64,
    /// Time taken from the interrupted CPUs' tasks.
    pub receiver_ns: u64,
}

/// The reclaimer's `tlbflush_unmap_batch`: CPUs that may cache a cleared PTE and whether one
/// of those PTEs was dirty. A reclaim pass runs atomically in the model, so one batch serves
/// every reclaimer in turn; each pass flushes what it left before it ends.
#[derive(Debug, Default)]
pub struct TlbBatch {
    pub mode: FlushMode,
    /// `arch_tlbflush_unmap_batch.cpumask`, one flag per CPU (x86).
    cpus: Vec<bool>,
    /// arm64: PTEs whose broadcast TLBI has not been waited for.
    tlbis: u64,
    pending: bool,
    /// `tlb_ubc->writable`.
    writable: bool,
    pub stats: TlbFlushStats,
    /// 6.12+'s lazy `mm_cpumask`: per mm, the CPUs that have run it (None: the older rule).
    mm_cpus: Option<Vec<Vec<bool>>>,
}

impl TlbBatch {
    pub fn new(mode: FlushMode, lazy_mm_cpumask: bool) -> TlbBatch {
        let lazy = lazy_mm_cpumask && matches!(mode, FlushMode::X86Batched);
        TlbBatch { mode, mm_cpus: lazy.then(Vec::new), ..Default::default() }
    }

    /// A task of `mm` starts running on `cpu` (`switch_mm_irqs_off` sets the CPU in the new
    /// mm's mask; 6.12+ leaves it in the old one's).
    pub(crate) fn note_switch_to(&mut self, mm: u32, cpu: usize, ncpu: usize) {
        if let Some(masks) = &mut self.mm_cpus {
            if masks.len() <= mm as usize {
                masks.resize(mm as usize + 1, Vec::new());
            }
            let m = &mut masks[mm as usize];
            m.resize(ncpu, false);
            m[cpu] = true;
        }
    }

    /// 6.12+: every CPU that has run `mm` but the reclaimer's `own` joins the batch; which of
    /// them are interrupted is decided at the flush (the non-lazy ones). False under the older
    /// rule, where the caller adds the CPUs running `mm` now. Runs for every folio unmapped:
    /// the mask is read straight into the batch.
    fn add_mm_mask(&mut self, mm: u32, own: usize, ncpu: usize, dirty: bool) -> bool {
        let Some(masks) = &self.mm_cpus else { return false };
        self.cpus.resize(ncpu.max(self.cpus.len()), false);
        if let Some(m) = masks.get(mm as usize) {
            for (c, _) in m.iter().enumerate().filter(|&(c, &on)| on && c != own) {
                self.cpus[c] = true;
                self.pending = true;
            }
        }
        self.writable |= dirty && self.pending;
        true
    }

    /// arm64: a cleared PTE's TLBI, broadcast by the hardware to every CPU.
    fn add_broadcast(&mut self, dirty: bool) {
        self.tlbis += 1;
        self.pending = true;
        self.writable |= dirty;
    }

    fn add(&mut self, ncpu: usize, cpus: impl Iterator<Item = usize>, dirty: bool) {
        self.cpus.resize(ncpu.max(self.cpus.len()), false);
        for c in cpus {
            self.cpus[c] = true;
            self.pending = true;
        }
        self.writable |= dirty && self.pending;
    }

    /// Take the pending CPUs, leaving the batch empty.
    fn take(&mut self) -> Vec<usize> {
        if !self.pending {
            return Vec::new();
        }
        self.pending = false;
        self.writable = false;
        self.tlbis = 0;
        let out = self.cpus.iter().enumerate().filter(|(_, &on)| on).map(|(c, _)| c).collect();
        self.cpus.iter_mut().for_each(|on| *on = false);
        out
    }
}

impl Sim {
    /// `try_to_unmap_one` cleared a PTE of task `task`'s address space (`dirty`: its dirty
    /// bit was set): the CPUs that may cache it join the reclaimer's batch
    /// (`set_tlb_ubc_flush_pending`); with none, the local flush in `unmap_ns` is all.
    pub(crate) fn tlb_flush_pending(&mut self, task: u32, dirty: bool) {
        if matches!(self.reclaim.tlb.mode, FlushMode::Arm64Batched | FlushMode::Arm64Immediate) {
            self.reclaim.tlb.add_broadcast(dirty);
            return;
        }
        let mm = self.tasks[task as usize].mm;
        let own = self.mem.cpu;
        let Sim { sched, tasks, reclaim, .. } = self;
        if reclaim.tlb.add_mm_mask(mm, own, sched.cpus.len(), dirty) {
            return;
        }
        // The non-lazy part of `mm_cpumask`: the CPUs other than the reclaimer's running a
        // user task in `mm`. Read straight into the batch: this runs for every folio unmapped.
        let running_mm = sched.cpus.iter().enumerate().filter_map(|(c, t)| {
            let t = &tasks[(*t)? as usize];
            (c != own && t.kind == TaskKind::User && t.mm == mm).then_some(c)
        });
        reclaim.tlb.add(sched.cpus.len(), running_mm, dirty);
    }

    /// Without batching (x86 before 4.3, arm64 before 6.5) `try_to_unmap_one` flushed each
    /// cleared PTE at once (`ptep_clear_flush`); with it the batch's flush does. Called after
    /// a folio is unmapped.
    pub(crate) fn try_to_unmap_flush_unless_batched(&mut self, cost: &mut CpuCost) {
        if !self.reclaim.tlb.mode.batched() {
            self.try_to_unmap_flush(cost);
        }
    }

    /// `try_to_unmap_flush_dirty`: flush before writing a folio out, if a dirty (possibly
    /// writable) PTE is pending.
    pub(crate) fn try_to_unmap_flush_dirty(&mut self, cost: &mut CpuCost) {
        if self.reclaim.tlb.writable {
            self.try_to_unmap_flush(cost);
        }
    }

    /// `try_to_unmap_flush` → `arch_tlbbatch_flush`: one IPI to each CPU of the batch, the
    /// reclaimer waiting for all; each interrupted CPU's task loses `tlb_ipi_receive_ns`.
    pub(crate) fn try_to_unmap_flush(&mut self, cost: &mut CpuCost) {
        if matches!(self.reclaim.tlb.mode, FlushMode::Arm64Batched | FlushMode::Arm64Immediate) {
            self.tlb_broadcast_wait(cost);
            return;
        }
        // A CPU gone idle since is in lazy TLB mode: no IPI (`tlb_is_not_lazy`). With the
        // 6.12+ mask, a CPU in a kernel thread is lazy too (`should_flush_tlb`).
        let lazy_mask = self.reclaim.tlb.mm_cpus.is_some();
        let tasks = &self.tasks;
        let targets: Vec<u32> = self
            .reclaim
            .tlb
            .take()
            .into_iter()
            .filter_map(|c| self.sched.cpus[c])
            .filter(|&t| !lazy_mask || tasks[t as usize].kind == TaskKind::User)
            .collect();
        if targets.is_empty() {
            return;
        }
        let initiator = self.costs.tlb_shootdown_ns + targets.len() as u64 * self.costs.tlb_shootdown_per_cpu_ns;
        cost.charge(CpuCategory::TlbShootdown, initiator);
        let receive = self.costs.tlb_ipi_receive_ns;
        for &tid in &targets {
            self.tasks[tid as usize].clock += receive;
        }
        let stats = &mut self.reclaim.tlb.stats;
        stats.shootdowns += 1;
        stats.ipis += targets.len() as u64;
        stats.initiator_ns += initiator;
        stats.receiver_ns += targets.len() as u64 * receive;
    }

    /// arm64: `DSB ISH` after the pending TLBIs, one per PTE without batching (each
    /// `flush_tlb_page`), one for the whole batch with it (`arch_tlbbatch_flush`).
    fn tlb_broadcast_wait(&mut self, cost: &mut CpuCost) {
        let tlb = &mut self.reclaim.tlb;
        if !tlb.pending {
            return;
        }
        let waits = if tlb.mode.batched() { 1 } else { tlb.tlbis };
        tlb.take();
        let ns = waits * self.costs.tlb_broadcast_flush_ns;
        cost.charge(CpuCategory::TlbShootdown, ns);
        tlb.stats.broadcast_waits += waits;
        tlb.stats.initiator_ns += ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_sends_one_ipi_per_cpu_however_many_unmaps_it_holds() {
        let mut b = TlbBatch::default();
        b.add(4, [1, 2].into_iter(), false);
        b.add(4, [2, 3].into_iter(), false);
        assert!(!b.writable);
        assert_eq!(b.take(), vec![1, 2, 3]);
        assert!(b.take().is_empty(), "a flushed batch is empty");
    }

    #[test]
    fn only_a_dirty_pte_with_cpus_to_flush_makes_the_batch_writable() {
        let mut b = TlbBatch::default();
        b.add(4, std::iter::empty(), true);
        assert!(!b.writable, "no remote CPU: flushed locally at once");
        b.add(4, [0].into_iter(), true);
        assert!(b.writable);
        b.take();
        assert!(!b.writable);
    }
}
