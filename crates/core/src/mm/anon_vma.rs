//! Anonymous memory shared across fork: anon_vmas, the VMAs linked into each, and the reverse
//! map of an anonymous folio through them (mm/rmap.c `anon_vma_fork`, `unlink_anon_vmas`,
//! `rmap_walk_anon`; kernel-algorithms.md §3.10 for the callers, `folio_referenced` and
//! `try_to_unmap`).
//!
//! In the kernel an anonymous folio points at an anon_vma, and the anon_vma's interval tree
//! holds every VMA that may map it: the VMA that faulted it in and, after fork, every child's
//! copy of that VMA (`anon_vma_fork` links the child's VMA into each anon_vma of the parent's
//! chain, then gives it an anon_vma of its own for the folios it allocates later). The rmap
//! walk visits the tree's VMAs in order and runs `page_vma_mapped_walk` in each, mapped there
//! or not (a sibling that broke copy-on-write maps its own copy at that address, one that
//! never touched it maps the original), and stops once it has found as many mappings as the
//! folio's mapcount (`folio_referenced_one`'s `pra->mapcount`, `try_to_unmap`'s
//! `folio_not_mapped`).
//!
//! Decisions:
//! * A frame keeps its owner as a VMA (`Frame::owner`), the one whose `vma->anon_vma` the
//!   folio belongs to; the anon_vma is `vmas[owner].anon_vma`. A VMA that was never forked has
//!   none (`NONE`) and is its own tree of one, so nothing changes for programs that do not
//!   fork and the walk costs one visit as before.
//! * All VMAs of one tree are copies of one mapping made by fork: same size, same page offset,
//!   so a folio's `index` is its page in every one of them (the kernel's `vma_address`).
//! * The tree's order is link order: the parent first, then children in fork order. The
//!   kernel's interval tree orders by start page offset, and fork copies have equal ones, which
//!   the augmented rbtree inserts to the right: link order.
//! * Mapcount is not stored: it is counted from the PTEs when needed (copy-on-write, the walk),
//!   so it can never disagree with them. A folio of a VMA that nothing was forked from
//!   (`Vma::forked` false) can be mapped by that VMA alone (other VMAs map a folio only through
//!   fork's copy of a PTE), so its walk is known without reading the tree: it visits the VMAs
//!   before it in the tree (`Vma::tree_pos`) and finds it there. Only folios of VMAs that forked
//!   count over their tree.
//! * Eras. From 2.6.34 (Rik van Riel's anon_vma chains, 5beb49305251) fork links the child's
//!   VMA into the parent's anon_vmas and gives it an anon_vma of its own for the folios it
//!   allocates later, so the walk of a child's own folio visits the child alone. Before
//!   (2.6.28 .. 2.6.33, `Memory::anon_vma_chains` false) `dup_mmap` copies the VMA with its
//!   `anon_vma` pointer and `anon_vma_link` adds the copy to the tail of that one anon_vma's
//!   list: every child's folios, copies made by copy-on-write and new faults alike, go into
//!   the parent's anon_vma, and `page_referenced_anon` / `try_to_unmap_anon` walk its list
//!   from the head (the parent, then the children in fork order) until the mapcount is found:
//!   the k-th child's own folio costs k + 1 visits. A program that forks thousands of workers
//!   (hackbench) walks thousands of VMAs per reclaimed page; that cost is why the chains came
//!   (kernel-algorithms.md §3.10).

use super::{pte_frame, Mappings, Memory, NONE, PTE_PRESENT, PTE_ZERO};

/// One anon_vma: the VMAs of its interval tree.
#[derive(Clone, Debug)]
pub struct AnonVma {
    /// The VMAs linked into its tree, in link order (the rmap walk's order).
    pub vmas: Vec<u32>,
    /// `anon_vma->root`: the oldest anon_vma of the fork family. A folio that is not exclusive
    /// to the VMA mapping it in (a swap-in of a slot other processes still reference) goes
    /// there (`__page_set_anon_rmap` with `exclusive` false).
    pub root: u32,
    /// The VMA whose `vma->anon_vma` this is: the owner a frame records for a folio of it.
    pub home: u32,
}

impl Memory {
    /// Number of VMAs in the tree of the anon_vma that `owner`'s folios belong to.
    #[inline]
    pub fn anon_tree_len(&self, owner: u32) -> usize {
        match self.vmas[owner as usize].anon_vma {
            NONE => 1,
            av => self.anon_vmas[av as usize].vmas.len(),
        }
    }

    /// The `k`-th VMA of that tree, in walk order.
    #[inline]
    pub fn anon_tree_vma(&self, owner: u32, k: usize) -> u32 {
        match self.vmas[owner as usize].anon_vma {
            NONE => owner,
            av => self.anon_vmas[av as usize].vmas[k],
        }
    }

    /// Does VMA `v` map frame `f` at page `index`?
    #[inline]
    pub fn maps(&self, v: u32, index: u32, f: u32) -> bool {
        let pte = self.vmas[v as usize].ptes[index as usize];
        pte & PTE_PRESENT != 0 && pte & PTE_ZERO == 0 && pte_frame(pte) == f
    }

    /// Mapcount and walk length of the anonymous folio in frame `f`, owned by VMA `owner`.
    pub fn anon_mappings(&self, f: u32, owner: u32, index: u32) -> Mappings {
        let mut m = Mappings::default();
        let vma = &self.vmas[owner as usize];
        if !vma.forked {
            // Only `owner` can map it: the walk reaches it after the VMAs before it.
            if self.maps(owner, index, f) {
                m.mapcount = 1;
                m.visits = vma.tree_pos + 1;
            }
            return m;
        }
        for k in 0..self.anon_tree_len(owner) {
            if self.maps(self.anon_tree_vma(owner, k), index, f) {
                m.mapcount += 1;
                m.visits = k as u32 + 1;
            }
        }
        m
    }

    /// Where the walk of the folio in frame `f` (owned by `owner`) can find its first mapping:
    /// the owner's position when only the owner can map it, else the head of the tree. The
    /// callers' loops start there; the VMAs before it are charged through `visits`.
    #[inline]
    pub fn anon_walk_from(&self, owner: u32) -> usize {
        let vma = &self.vmas[owner as usize];
        if vma.forked {
            0
        } else {
            vma.tree_pos as usize
        }
    }

    /// `anon_vma_fork`: link the child's copy `child` of VMA `parent` into every anon_vma of
    /// the parent's chain, then give it an anon_vma of its own (2.6.34 on); before the chains,
    /// the child joins the tail of the parent's one anon_vma and its folios go there. The
    /// parent gets its first anon_vma here if it had none (the kernel's `anon_vma_prepare` at
    /// its first fault: the same anon_vma, made later because only fork makes it matter).
    pub fn anon_vma_fork(&mut self, parent: u32, child: u32) {
        if self.vmas[parent as usize].anon_vma == NONE {
            let id = self.anon_vmas.len() as u32;
            self.anon_vmas.push(AnonVma { vmas: vec![parent], root: id, home: parent });
            self.vmas[parent as usize].anon_vma = id;
            self.vmas[parent as usize].tree_pos = 0;
        }
        self.vmas[parent as usize].forked = true;
        let parent_av = self.vmas[parent as usize].anon_vma;
        if !self.anon_vma_chains {
            // 2.6.28 dup_mmap + anon_vma_link: the copy shares `vma->anon_vma`.
            let av = &mut self.anon_vmas[parent_av as usize];
            av.vmas.push(child);
            self.vmas[child as usize].anon_vma = parent_av;
            self.vmas[child as usize].tree_pos = (av.vmas.len() - 1) as u32;
            return;
        }
        let root = self.anon_vmas[parent_av as usize].root;
        for av in self.anon_vmas.iter_mut().filter(|av| av.vmas.contains(&parent)) {
            av.vmas.push(child);
        }
        let id = self.anon_vmas.len() as u32;
        self.anon_vmas.push(AnonVma { vmas: vec![child], root, home: child });
        self.vmas[child as usize].anon_vma = id;
        self.vmas[child as usize].tree_pos = 0;
    }

    /// `unlink_anon_vmas`: VMA `v` leaves every tree it is linked into (its process exits).
    /// Its anon_vma stays: folios that belong to it may still be mapped by its children. The
    /// VMAs after it whose own tree this is move up one place.
    pub fn unlink_anon_vmas(&mut self, v: u32) {
        if self.vmas[v as usize].anon_vma == NONE {
            return;
        }
        for (id, av) in self.anon_vmas.iter_mut().enumerate() {
            let Some(at) = av.vmas.iter().position(|&x| x == v) else { continue };
            av.vmas.remove(at);
            for &x in &av.vmas[at..] {
                let vma = &mut self.vmas[x as usize];
                if vma.anon_vma == id as u32 {
                    vma.tree_pos -= 1;
                }
            }
        }
    }

    /// The owner to record for a folio that VMA `v` maps but does not own alone: the home VMA
    /// of the root anon_vma of `v`'s family (`anon_vma->root`), or `v` when it never forked.
    pub fn anon_root_owner(&self, v: u32) -> u32 {
        match self.vmas[v as usize].anon_vma {
            NONE => v,
            av => self.anon_vmas[self.anon_vmas[av as usize].root as usize].home,
        }
    }
}
