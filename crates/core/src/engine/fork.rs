//! fork()'s copy-on-write sharing of anonymous memory and the write faults that break it
//! (kernel/fork.c `dup_mmap`, mm/memory.c `copy_present_pte` / `copy_nonpresent_pte`,
//! `do_wp_page`, `wp_page_copy`; mm/rmap.c `anon_vma_fork`, `folio_move_anon_rmap`).
//!
//! A task with `fork_of` is forked from its parent when it starts: each of the parent's
//! anonymous VMAs gets a copy in the child, linked into the parent's anon_vma tree
//! (mm/anon_vma.rs), whose PTEs map the same folios (mapcount + 1) or hold the same swap
//! entries (`swap_duplicate`: count + 1). Both copies of a present PTE are write-protected and
//! the child's is old, as `copy_present_pte` leaves them. A write through a write-protected
//! PTE then either reuses the folio, when the writer is its only user (no other mapping, no
//! other swap entry: 5.17's `reuse_swap_page` test), moving it into the writer's own anon_vma
//! so the rmap walk no longer visits parent and siblings, or copies it into a new folio of the
//! writer's anon_vma (`wp_page_copy`), leaving the original to the others.
//!
//! Not modelled: fork's own CPU (copying page tables is done by the parent, outside reclaim,
//! and is charged to nobody), a parent that has exited before the child starts (nothing is
//! inherited then), and the anon_vma reuse heuristic for deep fork chains (`anon_vma->degree`:
//! one level of children gets one anon_vma each, as the kernel gives them).

use super::fault::Outcome;
use super::memory::Alloc;
use super::{Sim, TState};
use crate::config::MappingKind;
use crate::mm::*;
use crate::workload::Touch;

impl Sim {
    /// `dup_mmap` of the anonymous VMAs: the child's first mappings are its copies of the
    /// parent's (config/fork.rs put them there, in the parent's order).
    pub(super) fn fork_mm(&mut self, parent: u32, child: u32) {
        if self.tasks[parent as usize].state == TState::Done {
            return;
        }
        let parents: Vec<u32> = self.tasks[parent as usize].vmas.iter().copied().filter(|&v| self.mem.vmas[v as usize].kind == MappingKind::Anon).collect();
        let children: Vec<u32> = self.tasks[child as usize].vmas[..parents.len()].to_vec();
        for (pv, cv) in parents.into_iter().zip(children) {
            self.dup_anon_vma(pv, cv);
        }
    }

    /// One VMA's copy: link it into the anon_vma tree, then copy every PTE.
    fn dup_anon_vma(&mut self, pv: u32, cv: u32) {
        debug_assert_eq!(self.mem.vmas[pv as usize].ptes.len(), self.mem.vmas[cv as usize].ptes.len());
        self.mem.anon_vma_fork(pv, cv);
        for i in 0..self.mem.vmas[pv as usize].ptes.len() {
            let pte = self.mem.vmas[pv as usize].ptes[i];
            let copy = if pte & PTE_PRESENT != 0 {
                if pte & PTE_ZERO == 0 {
                    // copy_present_pte: write-protect the parent's PTE and the child's copy; the
                    // child's starts old.
                    self.mem.vmas[pv as usize].ptes[i] = pte & !PTE_WRITE;
                    self.mem.vmas[cv as usize].rss += 1;
                }
                pte & !(PTE_WRITE | PTE_ACCESSED)
            } else if pte & PTE_SWAP != 0 {
                // copy_nonpresent_pte: swap_duplicate.
                self.swap.areas[swp_dev(pte)].swap_duplicate(swp_slot(pte));
                self.mem.vmas[cv as usize].swapents += 1;
                pte
            } else {
                continue;
            };
            self.mem.vmas[cv as usize].ptes[i] = copy;
        }
    }

    /// `do_wp_page` for an anonymous page mapped read-only at `touch.page` of VMA `v`: reuse it
    /// if the writer is its only user, else copy it. Charges the task; the caller counts the
    /// fault.
    pub(super) fn do_wp_page(&mut self, tid: u32, cpu: usize, v: u32, touch: Touch) -> Outcome {
        let page = touch.page as usize;
        let pte = self.mem.vmas[v as usize].ptes[page];
        let f = pte_frame(pte);
        let fr = self.mem.frames[f as usize];
        let mapcount = self.mem.anon_mappings(f, fr.owner, fr.index).mapcount;
        let swapped_elsewhere = fr.has(PG_SWAPCACHE) && self.swap.areas[fr.swap_dev()].count(fr.slot) > 0;
        if mapcount == 1 && !swapped_elsewhere {
            // Reuse, dropping its swap copy (folio_free_swap), and move it into the writer's
            // anon_vma (folio_move_anon_rmap): the rmap walk now visits the writer alone.
            self.try_free_swap(f);
            let fr = &mut self.mem.frames[f as usize];
            fr.flags |= PG_DIRTY;
            fr.owner = v;
            self.mem.vmas[v as usize].ptes[page] = pte | PTE_WRITE | PTE_DIRTY | PTE_ACCESSED;
            self.tasks[tid as usize].clock += self.costs.minor_fault_ns;
            return Outcome::Done;
        }
        let new = match self.alloc_page(tid, cpu) {
            Alloc::Frame(n) => n,
            Alloc::Blocked => return Outcome::Blocked,
            Alloc::Killed => return Outcome::Killed,
        };
        if self.mem.vmas[v as usize].ptes[page] != pte {
            // Reclaim, entered by the allocation, took the page meanwhile (`pte_same` fails):
            // give the new page back and fault again on what the PTE holds now.
            self.free_frame(new);
            return self.fault_anon(tid, cpu, v, touch);
        }
        // wp_page_copy: the writer maps its own copy, a new folio of its own anon_vma; the
        // original stays with its other users.
        self.add_new_anon_folio(new, v, touch.page);
        self.mem.vmas[v as usize].ptes[page] = PTE_PRESENT | PTE_ACCESSED | PTE_WRITE | PTE_DIRTY | new as u64;
        if pte & PTE_DIRTY != 0 {
            self.mem.frames[f as usize].flags |= PG_DIRTY;
        }
        if mapcount == 1 {
            // Its other user was a swap entry: the original is mapped by no one now.
            self.mem.frames[f as usize].set_owner(Owner::None, NONE, 0);
            self.release_unmapped(f);
        }
        self.tasks[tid as usize].clock += self.costs.minor_fault_ns;
        Outcome::Done
    }
}
