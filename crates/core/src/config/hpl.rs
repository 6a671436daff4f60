//! `pattern = "hpl"` and `"linpack"` phases (workload/hpl.rs): checks N, NB and the process
//! grid, one clear message per mistake, and sizes the anonymous mapping as HPL_pdtest
//! allocates a rank's share (or as the shared-memory benchmark allocates its matrix) when the
//! file leaves its size out. Also checks `shared` mappings: they belong to tasks of threads.

use super::tasks::{MappingKind, MappingSpec, PatternKind, PhaseSpec, TaskSpec};
use super::units::{Size, PAGE_SIZE};
use crate::workload::hpl::Rank;

type Error = (String, String);

/// Largest matrix order accepted: 2^24 (a 2 PiB matrix) keeps every page index in range.
const MAX_N: u64 = 1 << 24;

/// Validate hpl and linpack parameters and set the size of their mappings given without one.
pub(super) fn resolve_hpl(tasks: &mut [TaskSpec]) -> Result<(), Error> {
    for (ti, t) in tasks.iter_mut().enumerate() {
        for (mi, m) in t.mappings.iter().enumerate() {
            if m.shared && !(t.threads && m.kind == MappingKind::Anon) {
                return Err((format!("task.{ti}.mapping.{mi}.shared"), format!("mapping {:?}: `shared` is for anonymous mappings of a task of threads (`threads = true`); processes share memory through a shmem or file mapping with `file`", m.name)));
            }
        }
        for pi in 0..t.phases.len() {
            let ph = &t.phases[pi];
            match ph.pattern {
                PatternKind::Hpl => resolve_hpl_phase(t, ti, pi)?,
                PatternKind::Linpack => resolve_linpack(t, ti, pi)?,
                _ => {
                    for (k, set) in [("n", ph.n.is_some()), ("nb", ph.nb.is_some()), ("grid", ph.grid.is_some())] {
                        if set {
                            return Err((format!("task.{ti}.phase.{pi}.{k}"), format!("`{k}` belongs to hpl and linpack phases (pattern = \"hpl\" or \"linpack\")")));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// An `hpl` phase: one MPI rank per instance on a P x Q grid, each with its own share.
fn resolve_hpl_phase(t: &mut TaskSpec, ti: usize, pi: usize) -> Result<(), Error> {
    let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
    let ph = &t.phases[pi];
    let (n, nb) = order_and_block(ph, &key, "an hpl phase needs the matrix order `n` (HPL.dat Ns)", "an hpl phase needs the block size `nb` (HPL.dat NBs)")?;
    let [p, q] = ph.grid.ok_or_else(|| (key("grid"), "an hpl phase needs the process grid `grid = [P, Q]`".into()))?;
    if p == 0 || q == 0 || p as u64 * q as u64 != t.instances as u64 {
        return Err((key("grid"), format!("expected P x Q = the task's instances ({}), one rank each, got [{p}, {q}]", t.instances)));
    }
    // Rank 0 holds the most rows and columns (numroc deals the extra blocks from 0).
    let bytes = Rank::new(n, nb, p as u64, q as u64, 0).bytes();
    let Some(mi) = t.mappings.iter().position(|m| m.name == ph.mapping) else { return Ok(()) };
    let m = &mut t.mappings[mi];
    if m.kind != MappingKind::Anon {
        return Err((key("mapping"), format!("HPL keeps its matrix in malloc()ed memory: mapping {:?} must be kind = \"anon\"", m.name)));
    }
    size_matrix_mapping(m, bytes, &format!("task.{ti}.mapping.{mi}.size"), &format!("a rank's share of an N = {n} matrix"))
}

/// A `linpack` phase: one process of threads over one shared matrix of `n * n` doubles.
fn resolve_linpack(t: &mut TaskSpec, ti: usize, pi: usize) -> Result<(), Error> {
    let key = |f: &str| format!("task.{ti}.phase.{pi}.{f}");
    let ph = &t.phases[pi];
    if ph.grid.is_some() {
        return Err((key("grid"), "the shared-memory LINPACK has no process grid: its threads are the task's instances".into()));
    }
    if !t.threads {
        return Err((format!("task.{ti}.threads"), "a linpack phase is one process: set `threads = true`, one instance per thread".into()));
    }
    let (n, nb) = order_and_block(ph, &key, "a linpack phase needs the problem size `n` (lininput's problem size)", "a linpack phase needs the block size `nb` the threads share the columns in")?;
    let bytes = Rank::shared(n, nb, t.instances.max(1) as u64, 0).bytes();
    let Some(mi) = t.mappings.iter().position(|m| m.name == ph.mapping) else { return Ok(()) };
    let m = &mut t.mappings[mi];
    if m.kind != MappingKind::Anon || !m.shared {
        return Err((format!("task.{ti}.mapping.{mi}"), format!("the threads factor one matrix: mapping {:?} must be kind = \"anon\" with shared = true", m.name)));
    }
    size_matrix_mapping(m, bytes, &format!("task.{ti}.mapping.{mi}.size"), &format!("an N = {n} matrix"))
}

/// The phase's matrix order `n` and block size `nb`, each present and in range.
fn order_and_block(ph: &PhaseSpec, key: &dyn Fn(&str) -> String, no_n: &str, no_nb: &str) -> Result<(u64, u64), Error> {
    let n = ph.n.ok_or_else(|| (key("n"), no_n.to_string()))?;
    if n == 0 || n > MAX_N {
        return Err((key("n"), format!("expected a matrix order in 1..={MAX_N}, got {n}")));
    }
    let nb = ph.nb.ok_or_else(|| (key("nb"), no_nb.to_string()))?;
    if nb == 0 || nb > n {
        return Err((key("nb"), format!("expected a block size in 1..=n ({n}), got {nb}")));
    }
    Ok((n, nb))
}

/// Size a matrix mapping left without one to `bytes` in whole pages (mmap maps whole pages:
/// the last double may start a page of its own), or check that a given size holds them.
fn size_matrix_mapping(m: &mut MappingSpec, bytes: u64, size_key: &str, what: &str) -> Result<(), Error> {
    if m.size.0 == 0 {
        m.size = Size(bytes.next_multiple_of(PAGE_SIZE));
    } else if m.size.pages() < bytes.div_ceil(PAGE_SIZE) {
        return Err((size_key.to_string(), format!("{} bytes cannot hold {what}: it needs {bytes} bytes (leave `size` out to have it computed)", m.size.0)));
    }
    Ok(())
}
