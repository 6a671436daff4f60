//! Files mapped by several processes (`file = "NAME"` on a file mapping): check that every
//! mapping of one file describes the same file.
//!
//! A program's binary and its shared libraries are one inode each, mapped by every process
//! that runs them: the page cache holds each page once, and the inode's `i_mmap` tree lists
//! every VMA mapping it, which is what reclaim's reverse-map walk of such a page visits
//! (engine/mod.rs `map_task` makes one inode per named file and links each mapping's VMA into
//! it). Whatever belongs to the file rather than to a mapping must then agree: its size (the
//! model maps whole files) and its readahead advice (kept per open file in the model). Whether
//! a mapping is executable (VM_EXEC) belongs to the VMA and may differ.

use super::tasks::{MappingKind, TaskSpec};
use std::collections::BTreeMap;

type Error = (String, String);

/// Validate every `file` name: on file mappings only, one size and one advice per file.
pub(super) fn check_shared_files(tasks: &[TaskSpec]) -> Result<(), Error> {
    // file name -> (task, mapping) of its first mapping
    let mut first: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (ti, t) in tasks.iter().enumerate() {
        for (mi, m) in t.mappings.iter().enumerate() {
            let Some(name) = m.file.as_deref() else { continue };
            let key = format!("task.{ti}.mapping.{mi}.file");
            if m.kind != MappingKind::File {
                return Err((key, format!("{name:?}: `file` names the file of a mapping of kind \"file\"")));
            }
            let &mut (t0, m0) = first.entry(name).or_insert((ti, mi));
            let other = &tasks[t0].mappings[m0];
            if other.size != m.size {
                return Err((format!("task.{ti}.mapping.{mi}.size"), format!("file {name:?} is {} bytes in task.{t0}.mapping.{m0}: every mapping of one file maps all of it", other.size.0)));
            }
            if other.advice != m.advice {
                return Err((format!("task.{ti}.mapping.{mi}.advice"), format!("file {name:?} has other advice in task.{t0}.mapping.{m0}: the model keeps readahead advice per file")));
            }
        }
    }
    Ok(())
}
