//! HPL, the High-Performance Linpack benchmark (netlib HPL 2.x), as the page touches of one
//! MPI rank (`pattern = "hpl"`; every task instance is a rank, `instances = P × Q`).
//!
//! **Data layout** (testing/ptest/HPL_pdtest.c): `[A | b]` is N × (N+1) doubles distributed
//! 2-D block-cyclically over a P × Q process grid in NB × NB blocks; ranks are numbered in
//! row-major order (HPL.dat's default PMAP), so rank r is grid row r / Q, column r % Q. Rank
//! (myrow, mycol) holds `mp = numroc(N, NB, myrow, P)` rows and `nq = numroc(N, NB, mycol, Q)`
//! columns, plus one column every rank allocates for the solve; the local matrix is stored
//! column-major with a leading dimension `ld`: `mp` rounded up to a multiple of `ALIGN` doubles
//! and never a power of two. Column `c` starts at double `c * ld` of the rank's mapping.
//!
//! **The run** (HPL_pdtest, HPL_pdgesv, HPL_pdtrsv), each stage a sequence of column sweeps
//! (each local column's pages from the first to the last row the stage works on):
//! 1. `HPL_pdmatgen`: every local column written, in order (the pseudo-random matrix).
//! 2. The right-looking LU factorisation, one step per block column k of NB columns:
//!    - the ranks of process column k % Q factor their part of the panel (recursive panel
//!      factorisation with HPL.dat's sample NBMIN = 4, NDIV = 2: each of its
//!      `1 + ceil(log2(NB / NBMIN))` recursion levels passes over the panel once);
//!    - every rank then updates its trailing columns (`HPL_pdupdate`: the row interchanges of
//!      `HPL_pdlaswp`, which in a random matrix pick pivot rows all over each column, the
//!      triangular solve on U and the DGEMM), one write pass over each trailing column from the
//!      first row of block k down. Look-ahead is not modelled (depth 0): it reorders the next
//!      panel's columns first, not what is touched.
//! 3. `HPL_pdtrsv`: the upper-triangular solve reads U's block columns last to first, the
//!    rows above each block's diagonal end.
//! 4. The residual check: `HPL_pdmatgen` regenerates `[A | b]` over the factors (every column
//!    written again), then `HPL_pdlange` reads A twice (1-norm, ∞-norm) and `HPL_dgemv` once.
//!
//! **Compute**: each pass costs its floating-point operations at `costs.cpu_flops_per_us` of
//! the rank's CPU, spread evenly over the pass's page touches — DGEMM 2·jb·rows per column,
//! the panel rows·jb² per step, the solve and the checks 2 (1 for a norm) per element. Matrix
//! generation costs no flops (HPL_rand is a few integer operations per element).
//!
//! **The Intel Optimized LINPACK Benchmark** (`pattern = "linpack"`, `Layout::Shared`): the
//! shared-memory benchmark Intel ships with MKL (`xlinpack_xeon64`, what the LKP test suite's
//! `linpack` test runs: one problem of order `sqrt(test_memory_size * 0.9 / 8)` with the leading
//! dimension equal to the order, 4 KiB aligned). One process whose threads (the task's
//! instances, `threads = true`) factor one column-major `n` × `n` matrix in place with MKL's
//! threaded `dgetrf`, then solve with `dgetrs` and check the residual. The model deals the
//! matrix's `nb`-column blocks round-robin over the threads, a 1 × T grid over one shared
//! matrix: thread t owns the block columns ≡ t (mod T) and does their generation, panel,
//! trailing update and solve, at the addresses those columns have in the one matrix (column
//! `g` starts at double `g * n`). Against netlib HPL the run differs where the data does:
//! `b` is a vector of its own (not a column of the matrix), so the solve is a forward pass
//! over L and a backward pass over U (`dgetrs`), and the check regenerates the matrix and reads
//! it for one norm and the matrix-vector product. MKL schedules the update dynamically with
//! look-ahead; the static round-robin keeps what is touched and by how many threads, not the
//! order in which MKL hands the tiles out.
//!
//! **Left out**: the panel and U workspaces (`HPL_pdpanel_init`, a few NB-wide buffers per
//! rank, small beside the matrix and touched every step), and the coupling between ranks: a
//! rank waits for nobody's panel broadcast, so a rank slowed by faults does not hold back the
//! others as HPL's message passing would.

use crate::config::{PatternKind, PhaseSpec};
use crate::mm::PAGE_SIZE;
use crate::workload::Touch;

/// HPL.dat's memory alignment in doubles (the sample file's 8).
pub const ALIGN: u64 = 8;
/// HPL.dat sample: the recursion stops at panels of NBMIN columns...
pub const NBMIN: u64 = 4;
/// ...splitting each panel into NDIV parts.
pub const NDIV: u64 = 2;
const DOUBLE: u64 = 8;
const DOUBLES_PER_PAGE: u64 = PAGE_SIZE / DOUBLE;

/// Where the ranks' columns live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// netlib HPL: each MPI rank allocates its own local matrix (HPL_pdtest).
    Distributed,
    /// The Intel Optimized LINPACK Benchmark: one matrix, lda = n, shared by the threads of
    /// one process; "rank" t is thread t of a 1 × T grid.
    Shared,
}

/// ScaLAPACK/HPL `numroc`: how many of `n` rows (or columns) dealt out in blocks of `nb`
/// round-robin over `procs` processes land on process `me` (the source process is 0).
pub fn numroc(n: u64, nb: u64, me: u64, procs: u64) -> u64 {
    let blocks = n / nb;
    let mut num = (blocks / procs) * nb;
    let extra = blocks % procs;
    if me < extra {
        num += nb;
    } else if me == extra {
        num += n % nb;
    }
    num
}

/// Passes the recursive panel factorisation makes over a panel of `jb` columns: one per
/// recursion level (each splits the panel into NDIV parts until NBMIN columns are left), and
/// the base case's.
fn panel_levels(jb: u64) -> u64 {
    let (mut width, mut levels) = (jb, 1);
    while width > NBMIN {
        width = width.div_ceil(NDIV);
        levels += 1;
    }
    levels
}

/// HPL_pdtest's leading dimension: `mp` rounded up to a multiple of ALIGN, never a power of 2.
pub fn leading_dimension(mp: u64) -> u64 {
    let mut ld = ((mp.max(1) - 1) / ALIGN) * ALIGN;
    loop {
        ld += ALIGN;
        if !ld.is_power_of_two() {
            return ld;
        }
    }
}

/// One rank's share of the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rank {
    pub n: u64,
    pub nb: u64,
    pub p: u64,
    pub q: u64,
    pub myrow: u64,
    pub mycol: u64,
    pub mp: u64,
    pub nq: u64,
    pub ld: u64,
    pub layout: Layout,
}

impl Rank {
    pub fn new(n: u64, nb: u64, p: u64, q: u64, rank: u64) -> Rank {
        assert!(n > 0 && nb > 0 && p > 0 && q > 0 && rank < p * q, "validated by config/hpl.rs");
        let (myrow, mycol) = (rank / q, rank % q);
        let mp = numroc(n, nb, myrow, p);
        let nq = numroc(n, nb, mycol, q);
        Rank { n, nb, p, q, myrow, mycol, mp, nq, ld: leading_dimension(mp), layout: Layout::Distributed }
    }

    /// Thread `thread` of `threads` sharing one `n` × `n` matrix (the Intel Optimized LINPACK
    /// Benchmark): a 1 × T grid whose local columns are columns of the shared matrix.
    pub fn shared(n: u64, nb: u64, threads: u64, thread: u64) -> Rank {
        Rank { ld: n, layout: Layout::Shared, ..Rank::new(n, nb, 1, threads, thread) }
    }

    /// Bytes of the mapping: HPL_pdtest's allocation for this rank, `(ALIGN + (ld + 1) *
    /// (nq + 1))` doubles; the shared matrix's `n * n` doubles.
    pub fn bytes(&self) -> u64 {
        match self.layout {
            Layout::Distributed => (ALIGN + (self.ld + 1) * (self.nq + 1)) * DOUBLE,
            Layout::Shared => self.n * self.n * DOUBLE,
        }
    }

    /// Local columns holding `[A | b]`: the rank owning global column N holds b after its nq.
    /// The shared benchmark keeps b in a vector of its own.
    fn columns_with_b(&self) -> u64 {
        let b = self.layout == Layout::Distributed && (self.n / self.nb) % self.q == self.mycol;
        self.nq + u64::from(b)
    }

    /// The global column of local column `c` (block-cyclic over the Q process columns).
    fn global_column(&self, c: u64) -> u64 {
        (c / self.nb) * self.q * self.nb + self.mycol * self.nb + c % self.nb
    }

    fn blocks(&self) -> u64 {
        self.n.div_ceil(self.nb)
    }

    /// The passes of one stage of the run, in order.
    fn stage(&self, stage: Stage) -> Vec<Pass> {
        let all = |write, flops_per_element| Pass { cols: (0, self.columns_with_b()), rows: (0, self.mp), write, sweeps: 1, flops: flops_per_element * self.mp * self.columns_with_b() };
        match stage {
            Stage::Generate | Stage::Regenerate => vec![all(true, 0)],
            Stage::Factor(k) => self.factor_step(k),
            Stage::ForwardSolve(k) => self.forward_solve_step(k),
            Stage::Solve(k) => self.solve_step(k),
            // HPL_pdtest: the 1-norm and the infinity-norm; the shared benchmark: one norm.
            Stage::Norms if self.layout == Layout::Shared => vec![all(false, 1)],
            Stage::Norms => vec![all(false, 1), all(false, 1)],
            Stage::Residual => vec![all(false, 2)],
        }
    }

    /// Step k of the factorisation: this rank's panel part (if its process column owns block
    /// column k), then its trailing update.
    fn factor_step(&self, k: u64) -> Vec<Pass> {
        let jb = self.nb.min(self.n - k * self.nb);
        let first_row = numroc(k * self.nb, self.nb, self.myrow, self.p);
        let first_col = numroc(k * self.nb, self.nb, self.mycol, self.q);
        let rows = self.mp - first_row;
        let mut passes = Vec::with_capacity(2);
        let mut trailing = first_col;
        if k % self.q == self.mycol {
            trailing += jb;
            passes.push(Pass { cols: (first_col, first_col + jb), rows: (first_row, self.mp), write: true, sweeps: panel_levels(jb), flops: rows * jb * jb });
        }
        let cols = self.columns_with_b().saturating_sub(trailing);
        if cols > 0 && rows > 0 {
            passes.push(Pass { cols: (trailing, trailing + cols), rows: (first_row, self.mp), write: true, sweeps: 1, flops: 2 * jb * rows * cols });
        }
        passes
    }

    /// Back substitution, block column k (last to first): the ranks owning it read its rows
    /// above the end of the diagonal block.
    fn solve_step(&self, k: u64) -> Vec<Pass> {
        if k % self.q != self.mycol {
            return Vec::new();
        }
        let jb = self.nb.min(self.n - k * self.nb);
        let col = numroc(k * self.nb, self.nb, self.mycol, self.q);
        let rows = numroc(k * self.nb + jb, self.nb, self.myrow, self.p);
        if rows == 0 {
            return Vec::new();
        }
        vec![Pass { cols: (col, col + jb), rows: (0, rows), write: false, sweeps: 1, flops: 2 * rows * jb }]
    }

    /// `dgetrs`'s forward substitution with L, block column k (first to last): the thread
    /// owning it reads its rows below the diagonal block's start. (HPL has none: b rides along
    /// as column N of the factorisation.)
    fn forward_solve_step(&self, k: u64) -> Vec<Pass> {
        if k % self.q != self.mycol {
            return Vec::new();
        }
        let jb = self.nb.min(self.n - k * self.nb);
        let col = numroc(k * self.nb, self.nb, self.mycol, self.q);
        let first_row = numroc(k * self.nb, self.nb, self.myrow, self.p);
        if first_row >= self.mp {
            return Vec::new();
        }
        vec![Pass { cols: (col, col + jb), rows: (first_row, self.mp), write: false, sweeps: 1, flops: 2 * (self.mp - first_row) * jb }]
    }

    /// The stage after `s`, None at the end of the run.
    fn next_stage(&self, s: Stage) -> Option<Stage> {
        let last = self.blocks() - 1;
        Some(match s {
            Stage::Generate => Stage::Factor(0),
            Stage::Factor(k) if k < last => Stage::Factor(k + 1),
            Stage::Factor(_) if self.layout == Layout::Shared => Stage::ForwardSolve(0),
            Stage::Factor(_) => Stage::Solve(last),
            Stage::ForwardSolve(k) if k < last => Stage::ForwardSolve(k + 1),
            Stage::ForwardSolve(_) => Stage::Solve(last),
            Stage::Solve(k) if k > 0 => Stage::Solve(k - 1),
            Stage::Solve(_) => Stage::Regenerate,
            Stage::Regenerate => Stage::Norms,
            Stage::Norms => Stage::Residual,
            Stage::Residual => return None,
        })
    }

    /// The first and one-past-last page of column `c`'s rows `rows`.
    fn column_pages(&self, c: u64, rows: (u64, u64)) -> (u64, u64) {
        let first = match self.layout {
            Layout::Distributed => ALIGN + c * self.ld,
            // The matrix starts on a page (lininput's 4 KiB alignment).
            Layout::Shared => self.global_column(c) * self.ld,
        };
        ((first + rows.0) / DOUBLES_PER_PAGE, (first + rows.1 - 1) / DOUBLES_PER_PAGE + 1)
    }

    /// Page touches of the whole run.
    pub fn touches(&self) -> u64 {
        let mut stage = Some(Stage::Generate);
        let mut n = 0;
        while let Some(s) = stage {
            n += self.stage(s).iter().map(|p| self.pass_touches(p)).sum::<u64>();
            stage = self.next_stage(s);
        }
        n
    }

    fn pass_touches(&self, p: &Pass) -> u64 {
        if p.rows.0 >= p.rows.1 {
            return 0;
        }
        let one: u64 = (p.cols.0..p.cols.1).map(|c| {
            let (a, b) = self.column_pages(c, p.rows);
            b - a
        }).sum();
        one * p.sweeps
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Generate,
    Factor(u64),
    ForwardSolve(u64),
    Solve(u64),
    Regenerate,
    Norms,
    Residual,
}

/// `sweeps` passes over local columns `cols`, rows `rows` of each, costing `flops` in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pass {
    cols: (u64, u64),
    rows: (u64, u64),
    write: bool,
    sweeps: u64,
    flops: u64,
}

/// The touch stream of one rank.
#[derive(Clone, Debug)]
pub struct HplGen {
    rank: Rank,
    /// Picoseconds of CPU per floating-point operation.
    ps_per_flop: f64,
    stage: Option<Stage>,
    passes: Vec<Pass>,
    pass: usize,
    sweep: u64,
    col: u64,
    page: u64,
    page_end: u64,
    /// The compute that follows each touch of the current pass.
    compute_ns: u64,
    total: u64,
}

impl HplGen {
    /// The touch stream of instance `rank` of `instances`: an MPI rank of netlib HPL
    /// (`pattern = "hpl"`), or a thread of the shared-memory benchmark (`"linpack"`).
    pub fn new(spec: &PhaseSpec, rank: u64, instances: u64, flops_per_us: u64) -> HplGen {
        let (n, nb) = (spec.n.expect("validated"), spec.nb.expect("validated"));
        let rank = match spec.pattern {
            PatternKind::Linpack => Rank::shared(n, nb, instances, rank),
            _ => {
                let [p, q] = spec.grid.expect("validated");
                Rank::new(n, nb, p as u64, q as u64, rank)
            }
        };
        let mut g = HplGen { rank, ps_per_flop: 1e6 / flops_per_us as f64, stage: Some(Stage::Generate), passes: Vec::new(), pass: 0, sweep: 0, col: 0, page: 0, page_end: 0, compute_ns: 0, total: rank.touches() };
        g.passes = rank.stage(Stage::Generate);
        g.start_pass();
        g
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Set up the current pass (or move to the next stage with passes).
    fn start_pass(&mut self) {
        loop {
            if let Some(p) = self.passes.get(self.pass).copied() {
                let touches = self.rank.pass_touches(&p);
                if touches == 0 {
                    self.pass += 1;
                    continue;
                }
                self.compute_ns = (p.flops as f64 * self.ps_per_flop / 1000.0 / touches as f64).round() as u64;
                self.sweep = 0;
                self.start_column(p.cols.0);
                return;
            }
            let Some(next) = self.stage.and_then(|s| self.rank.next_stage(s)) else {
                self.stage = None;
                return;
            };
            self.stage = Some(next);
            self.passes = self.rank.stage(next);
            self.pass = 0;
        }
    }

    fn start_column(&mut self, c: u64) {
        self.col = c;
        let p = self.passes[self.pass];
        (self.page, self.page_end) = self.rank.column_pages(c, p.rows);
    }
}

impl Iterator for HplGen {
    type Item = (Touch, u64);

    /// The next touch and the program's CPU time that follows it.
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.stage?;
        let p = self.passes[self.pass];
        let step = (Touch { page: self.page as u32, write: p.write, check: false }, self.compute_ns);
        self.page += 1;
        if self.page == self.page_end {
            if self.col + 1 < p.cols.1 {
                self.start_column(self.col + 1);
            } else if self.sweep + 1 < p.sweeps {
                self.sweep += 1;
                self.start_column(p.cols.0);
            } else {
                self.pass += 1;
                self.start_pass();
            }
        }
        Some(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numroc_deals_blocks_round_robin() {
        // 10 rows in blocks of 3 over 2 processes: blocks 0 and 2 on process 0; block 1 and
        // the 1-row tail block 3 on process 1.
        assert_eq!(numroc(10, 3, 0, 2), 6);
        assert_eq!(numroc(10, 3, 1, 2), 3 + 1);
        let total: u64 = (0..7).map(|me| numroc(69_504, 192, me, 7)).sum();
        assert_eq!(total, 69_504);
    }

    #[test]
    fn a_192_column_panel_is_passed_over_once_per_recursion_level() {
        // 192 -> 96 -> 48 -> 24 -> 12 -> 6 -> 3: six splits and the base case.
        assert_eq!(panel_levels(192), 7);
        assert_eq!(panel_levels(4), 1);
    }

    #[test]
    fn leading_dimension_is_aligned_and_never_a_power_of_two() {
        assert_eq!(leading_dimension(1000), 1000);
        assert_eq!(leading_dimension(1001), 1008);
        assert_eq!(leading_dimension(1024), 1032);
    }

    fn gen(n: u64, nb: u64, grid: [u32; 2], rank: u64) -> HplGen {
        let spec: PhaseSpec = toml::from_str(&format!("mapping = \"m\"\npattern = \"hpl\"\nn = {n}\nnb = {nb}\ngrid = [{}, {}]", grid[0], grid[1])).unwrap();
        HplGen::new(&spec, rank, u64::from(grid[0] * grid[1]), 15_200)
    }

    #[test]
    fn a_rank_touches_what_it_counted_and_stays_in_its_allocation() {
        for rank in 0..6 {
            let mut g = gen(1_000, 64, [2, 3], rank);
            let pages = g.rank.bytes().div_ceil(PAGE_SIZE);
            let mut n = 0;
            for (t, _) in g.by_ref() {
                assert!((t.page as u64) < pages, "rank {rank}: page {} beyond {pages}", t.page);
                n += 1;
            }
            assert_eq!(n, g.total(), "rank {rank}");
        }
    }

    #[test]
    fn the_trailing_update_shrinks_step_by_step() {
        // One rank, so every step updates all columns right of the panel, rows below it.
        let r = Rank::new(4_096, 256, 1, 1, 0);
        let update = |k| r.factor_step(k)[1];
        assert_eq!(update(0).cols, (256, 4_097));
        assert_eq!(update(0).rows, (0, 4_096));
        assert_eq!(update(3).cols, (1_024, 4_097));
        assert_eq!(update(3).rows, (768, 4_096));
        assert!(r.pass_touches(&update(3)) < r.pass_touches(&update(0)));
    }

    #[test]
    fn the_residual_check_regenerates_then_reads_the_whole_matrix_three_times() {
        let r = Rank::new(2_000, 100, 1, 1, 0);
        let whole = r.pass_touches(&r.stage(Stage::Regenerate)[0]);
        let reads: u64 = [Stage::Norms, Stage::Residual].iter().flat_map(|&s| r.stage(s)).map(|p| {
            assert!(!p.write);
            r.pass_touches(&p)
        }).sum();
        assert_eq!(reads, 3 * whole);
    }

    #[test]
    fn update_compute_is_the_dgemm_flops_at_the_cpu_rate() {
        // n = 4096, nb = 256, one rank: step 0's update is 2 * 256 * 4096 * 3841 flops.
        let mut g = gen(4_096, 256, [1, 1], 0);
        while g.stage != Some(Stage::Factor(0)) || g.pass != 1 {
            g.next().unwrap();
        }
        let p = g.passes[1];
        let ns = 2.0 * 256.0 * 4096.0 * 3841.0 / 15_200.0 * 1000.0;
        let per_touch = ns / g.rank.pass_touches(&p) as f64;
        let (_, compute) = g.next().unwrap();
        assert!((compute as f64 - per_touch).abs() <= 0.5, "{compute} vs {per_touch}");
    }

    #[test]
    fn shared_threads_cover_every_column_of_one_matrix_once() {
        // 3 threads, n = 1000 in 64-column blocks: thread t owns the block columns = t mod 3,
        // at their places in one column-major matrix with lda = n.
        let ranks: Vec<Rank> = (0..3).map(|t| Rank::shared(1_000, 64, 3, t)).collect();
        let mut owner = vec![u64::MAX; 1_000];
        for r in &ranks {
            assert_eq!((r.mp, r.ld, r.bytes()), (1_000, 1_000, 8_000_000));
            for c in 0..r.nq {
                let g = r.global_column(c);
                assert_eq!((g / 64) % 3, r.mycol, "block-cyclic ownership");
                assert_eq!(owner[g as usize], u64::MAX, "column {g} owned twice");
                owner[g as usize] = r.mycol;
            }
            assert_eq!(r.columns_with_b(), r.nq, "b is a vector of its own");
        }
        assert!(owner.iter().all(|&o| o != u64::MAX), "every column has an owner");
        let r = &ranks[1];
        let last = r.nq - 1;
        assert_eq!(r.column_pages(last, (0, 1_000)).1, (r.global_column(last) * 1_000 + 999) / 512 + 1);
    }

    #[test]
    fn the_shared_benchmark_solves_with_l_and_u_and_checks_with_one_norm() {
        let r = Rank::shared(2_000, 100, 1, 0);
        let whole = r.pass_touches(&r.stage(Stage::Regenerate)[0]);
        assert_eq!(r.stage(Stage::Norms).len(), 1, "one norm, not HPL's two");
        let forward: u64 = (0..20).flat_map(|k| r.stage(Stage::ForwardSolve(k))).map(|p| r.pass_touches(&p)).sum();
        let backward: u64 = (0..20).flat_map(|k| r.stage(Stage::Solve(k))).map(|p| r.pass_touches(&p)).sum();
        // L from each block's diagonal down and U from the top to each block's end: each a
        // triangle, the two the matrix once (the diagonal blocks and the pages a triangle's
        // edge cuts through twice).
        for (what, half) in [("forward", forward), ("backward", backward)] {
            assert!(half > whole * 2 / 5 && half < whole * 4 / 5, "{what}: {half} of {whole}");
        }
        assert!(forward + backward >= whole && forward + backward < whole * 13 / 10, "{forward} + {backward} vs {whole}");
        assert_eq!(r.next_stage(Stage::Factor(19)), Some(Stage::ForwardSolve(0)));
        assert_eq!(r.next_stage(Stage::ForwardSolve(19)), Some(Stage::Solve(19)));
        let hpl = Rank::new(2_000, 100, 1, 1, 0);
        assert_eq!(hpl.next_stage(Stage::Factor(19)), Some(Stage::Solve(19)), "HPL has no forward pass");
    }

    #[test]
    fn a_shared_thread_touches_what_it_counted_inside_the_matrix() {
        for thread in 0..4 {
            let spec: PhaseSpec = toml::from_str("mapping = \"m\"\npattern = \"linpack\"\nn = 700\nnb = 32").unwrap();
            let mut g = HplGen::new(&spec, thread, 4, 15_200);
            let pages = g.rank.bytes().div_ceil(PAGE_SIZE);
            let mut n = 0;
            for (t, _) in g.by_ref() {
                assert!((t.page as u64) < pages, "thread {thread}: page {} beyond {pages}", t.page);
                n += 1;
            }
            assert_eq!(n, g.total(), "thread {thread}");
        }
    }
}
