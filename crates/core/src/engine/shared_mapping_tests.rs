//! Threads sharing their process's mappings (config `shared`): one VMA for every thread,
//! counted and torn down once when the process's last thread exits.

use super::{Sim, TaskKind};

/// Three threads of one process, each with a shared 1 MiB heap and a private 1 MiB arena.
fn three_threads() -> (Sim, Vec<u32>) {
    let text = "name = \"t\"\n[machine]\nram = \"64MiB\"\n[[task]]\nname = \"omp\"\ninstances = 3\nthreads = true\n\
        [[task.mapping]]\nname = \"heap\"\nkind = \"anon\"\nsize = \"1MiB\"\nshared = true\n\
        [[task.mapping]]\nname = \"arena\"\nkind = \"anon\"\nsize = \"1MiB\"\n\
        [[task.phase]]\nmapping = \"heap\"\npattern = \"sequential\"\n";
    let s = Sim::new(&crate::config::load(text, "t.toml", &[]).expect("valid"));
    let users = (0..s.tasks.len() as u32).filter(|&t| s.tasks[t as usize].kind == TaskKind::User).collect();
    (s, users)
}

#[test]
fn threads_map_one_vma_for_a_shared_mapping_and_their_own_for_the_rest() {
    let (s, users) = three_threads();
    let heap: Vec<u32> = users.iter().map(|&t| s.tasks[t as usize].vmas[0]).collect();
    let arena: Vec<u32> = users.iter().map(|&t| s.tasks[t as usize].vmas[1]).collect();
    assert!(heap.iter().all(|&v| v == heap[0]), "one heap VMA: {heap:?}");
    assert!(arena[0] != arena[1] && arena[1] != arena[2] && arena[0] != arena[2], "private arenas: {arena:?}");
}

#[test]
fn a_shared_mapping_is_torn_down_once_by_the_last_thread_to_exit() {
    let (mut s, users) = three_threads();
    let heap = s.tasks[users[0] as usize].vmas[0];
    let arenas: Vec<u32> = users.iter().map(|&t| s.tasks[t as usize].vmas[1]).collect();
    s.mem.vmas[heap as usize].rss = 5;
    for &a in &arenas {
        s.mem.vmas[a as usize].rss = 3;
    }
    let mm = s.tasks[users[0] as usize].mm;
    let mut expected = vec![heap];
    expected.extend(&arenas);
    expected.sort_unstable();
    assert_eq!(s.mm_vmas(mm), expected, "the shared heap counted once");
    for (i, &t) in users.iter().enumerate() {
        s.finish_task(t, usize::MAX, false);
        let last = i + 1 == users.len();
        let left = if last { 0 } else { 5 };
        assert_eq!(s.mem.vmas[heap as usize].rss, left, "heap after thread {i} exits");
        assert!(arenas.iter().all(|&a| s.mem.vmas[a as usize].rss == if last { 0 } else { 3 }), "arenas after thread {i} exits");
    }
}
