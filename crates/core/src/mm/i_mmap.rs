//! Files mapped by several processes: the inode's `i_mmap` tree and the reverse map of a
//! page-cache (or shmem) folio through it (mm/rmap.c `rmap_walk_file`, mm/mmap.c
//! `unlink_file_vma`; kernel-algorithms.md §3.10 for the callers, `folio_referenced` and
//! `try_to_unmap`).
//!
//! In the kernel a page-cache folio points at its `address_space`, and the address space's
//! interval tree (`i_mmap`) holds every VMA mapping a range of the file: each process running
//! a program maps its binary and shared libraries, so one page of them is reached from all of
//! them. The rmap walk visits the tree's VMAs that cover the folio's offset and runs
//! `page_vma_mapped_walk` in each, mapped there or not (a process that never executed that
//! code has no PTE for it), and stops once it has found as many mappings as the folio's
//! mapcount. A folio no PTE maps is not walked at all (`folio_referenced` returns when
//! `folio_mapcount` is 0, `try_to_unmap` is only called for mapped folios).
//!
//! Decisions:
//! * `Object::vmas` is the tree, in the walk's order. Every VMA maps the whole file at page
//!   offset 0 (the model maps whole files), so every VMA of the tree covers every folio, and
//!   equal start offsets make the interval tree's order the insertion order: mmap order.
//! * Mapcount is counted from the PTEs when needed, as for anonymous folios (`anon_vma.rs`): a
//!   large folio's mapcount is its PTEs over all VMAs.

use super::{pte_frame, Mappings, Memory, PTE_PRESENT};

impl Memory {
    /// Mapcount and walk length of the shmem or page-cache folio whose page is frame `f`.
    pub fn file_mappings(&self, f: u32) -> Mappings {
        let fr = &self.frames[f as usize];
        let obj = &self.objects[fr.owner as usize];
        let order = fr.folio_order();
        let first = (fr.index as usize) & !((1usize << order) - 1);
        let mut m = Mappings::default();
        for (k, &v) in obj.vmas.iter().enumerate() {
            let ptes = &self.vmas[v as usize].ptes;
            let mapped = (first..first + (1 << order))
                .filter(|&i| {
                    let page = if order == 0 { f } else { pte_frame(obj.entries[i]) };
                    ptes.get(i).is_some_and(|&p| p & PTE_PRESENT != 0 && pte_frame(p) == page)
                })
                .count() as u32;
            if mapped > 0 {
                m.mapcount += mapped;
                m.visits = k as u32 + 1;
            }
        }
        m
    }

    /// `unlink_file_vma`: VMA `v` leaves its file's i_mmap tree (its process exits). Returns
    /// whether other VMAs still map the file.
    pub fn unlink_file_vma(&mut self, v: u32) -> bool {
        let obj = &mut self.objects[self.vmas[v as usize].object as usize];
        obj.vmas.retain(|&x| x != v);
        !obj.vmas.is_empty()
    }
}
