//! Forked tasks (`fork_of`): check the parent, and give the child the parent's anonymous
//! mappings so that its phases can name them.
//!
//! A forked child starts with copies of its parent's anonymous VMAs (`dup_mmap`): the same
//! size, the same pages shared copy-on-write (engine/fork.rs does the sharing when the child
//! starts). The resolver puts copies of the parent's anonymous mapping specs, in the parent's
//! order, at the front of the child's list; the engine pairs them with the parent's by that
//! position. Shared (shmem) and file mappings are not inherited: the model's forked programs
//! share anonymous memory only, which is what the rmap cost of fork is about.

use super::tasks::{MappingKind, TaskSpec};

type Error = (String, String);

/// Validate every `fork_of` and prepend the inherited mappings.
pub(super) fn resolve_forks(tasks: &mut [TaskSpec]) -> Result<(), Error> {
    for ti in 0..tasks.len() {
        let Some(parent) = tasks[ti].fork_of.clone() else { continue };
        let key = format!("task.{ti}.fork_of");
        let Some(pi) = tasks[..ti].iter().position(|t| t.name == parent) else {
            let why = if tasks.iter().any(|t| t.name == parent) { "must come before this task in the file" } else { "no such task" };
            return Err((key, format!("{parent:?}: {why} (a forked task names an earlier task it is forked from)")));
        };
        let p = &tasks[pi];
        if p.instances != 1 {
            return Err((key, format!("{parent:?} has {} instances: a parent to fork from must have one", p.instances)));
        }
        if p.start_delay.0 > tasks[ti].start_delay.0 {
            return Err((key, format!("{parent:?} starts after this task: a child is forked from a running parent (start_delay)")));
        }
        let inherited: Vec<_> = p.mappings.iter().filter(|m| m.kind == MappingKind::Anon).cloned().collect();
        if inherited.is_empty() {
            return Err((key, format!("{parent:?} has no anonymous mapping to share with its children")));
        }
        let child = &mut tasks[ti];
        let already = child.mappings.len() >= inherited.len() && child.mappings.iter().zip(&inherited).all(|(c, i)| c.name == i.name && c.size == i.size);
        if already {
            continue; // a configuration resolved before (its mappings were prepended then)
        }
        if let Some(m) = child.mappings.iter().find(|m| inherited.iter().any(|i| i.name == m.name)) {
            return Err((format!("task.{ti}.mapping"), format!("{:?} is the name of a mapping inherited from {parent:?}: name the child's own mappings differently", m.name)));
        }
        child.mappings.splice(0..0, inherited);
    }
    Ok(())
}

/// How many of `parent`'s mappings a child forked from it inherits (they come first in the
/// child's list).
pub fn inherited_mappings(parent: &TaskSpec) -> usize {
    parent.mappings.iter().filter(|m| m.kind == MappingKind::Anon).count()
}
