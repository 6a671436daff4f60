//! A kv store driven by its client over connections (engine/kv_conn.rs): the client keeps
//! `pipeline` requests outstanding and the worker answers each batch in one write, sleeping in
//! `epoll_wait` between batches; a worker asleep is not running the mm, so the TLB flushes of
//! reclaim interrupt only the CPUs that serve requests at that moment.

mod common;
use common::*;
use swaplab_core::stats::result::SimResult;

/// 8 memcached threads on 8 CPUs with 20,000 items of 2000 bytes (47 MiB of slabs) in 28 MiB
/// of usable memory, swapping to a ramdisk: a fill, then 4,000 random gets per thread with
/// pipeline 8;
/// with `client`, memtier's 8 threads drive them, one connection each.
fn kv(client: bool) -> String {
    let mut s = String::from(
        r#"
name = "kv-conn"
seed = 7
[machine]
cpus = 8
ram = "32MiB"
kernel_reserved = "4MiB"
[[swap]]
device = "ramdisk"
size = "96MiB"
[[task]]
name = "memcached"
instances = 8
threads = true
[[task.mapping]]
name = "slabs"
kind = "anon"
[[task.phase]]
mapping = "slabs"
pattern = "kv-set"
keys = 20000
value_size = 2000
pipeline = 8
measure = false
[[task.phase]]
mapping = "slabs"
pattern = "kv-get"
keys = 20000
value_size = 2000
requests = 4000
pipeline = 8
"#,
    );
    if client {
        s.push_str(
            r#"
[[task]]
name = "memtier"
instances = 8
threads = true
[[task.mapping]]
name = "buffers"
kind = "anon"
size = "64KiB"
[[task.phase]]
mapping = "buffers"
pattern = "kv-client"
server = "memcached"
pipeline = 8
"#,
        );
    }
    s
}

fn side<'a>(res: &'a SimResult, name: &str) -> Vec<&'a swaplab_core::stats::result::TaskResult> {
    res.tasks.iter().filter(|t| t.name.starts_with(name)).collect()
}

#[test]
fn a_worker_answers_each_batch_of_its_client_in_one_write_and_sleeps_between_batches() {
    let res = run_checked(&kv(true), &[]);
    let (servers, clients) = (side(&res, "memcached"), side(&res, "memtier"));
    assert_eq!((servers.len(), clients.len()), (8, 8));
    // Per worker: 2,500 sets and 4,000 gets, in batches of the client's pipeline of 8.
    let requests = 20_000 / 8 + 4_000;
    for (s, c) in servers.iter().zip(&clients) {
        let served = s.requests.as_ref().map_or(0, |r| r.ops);
        assert_eq!(served, 4_000, "{}: the measured gets", s.name);
        // One write per batch each way; every batch the client sent was read by the worker.
        assert_eq!(c.messages_sent, (requests as u64).div_ceil(8), "{}: one write per batch of 8", c.name);
        assert!(s.messages_received <= c.messages_sent && s.messages_received * 8 >= requests as u64, "{}: {} reads for {} sends", s.name, s.messages_received, c.messages_sent);
        assert_eq!(s.messages_sent, c.messages_received, "{}: each write of replies is read once", s.name);
        // The worker sleeps while the client works, and the client while the worker does.
        assert!(s.ipc_wait_ns > 0 && c.ipc_wait_ns > 0, "{}: waits {} / {} ns", s.name, s.ipc_wait_ns, c.ipc_wait_ns);
        // The client ends when its worker is done.
        assert!(c.end_ns >= s.end_ns, "{} ends at {} before its worker at {}", c.name, c.end_ns, s.end_ns);
    }
}

#[test]
fn tlb_flushes_spare_the_cpus_of_workers_asleep_between_their_clients_batches() {
    let driven = run_checked(&kv(true), &[]);
    let alone = run_checked(&kv(false), &[]);
    for (what, res) in [("with memtier", &driven), ("workers alone", &alone)] {
        assert!(v(res, "pswpout") > 0 && res.summary.tlb_shootdowns > 0, "{what}: 47 MiB in 28 MiB must swap and flush");
    }
    let per_flush = |r: &SimResult| r.summary.tlb_ipis as f64 / r.summary.tlb_shootdowns as f64;
    // Workers always running: nearly every other CPU runs the mm at each flush.
    assert!(per_flush(&alone) > 5.0, "workers alone: {:.2} IPIs per flush", per_flush(&alone));
    // With the client on the same CPUs, a worker runs only while it serves a batch.
    assert!(per_flush(&driven) < 0.9 * per_flush(&alone), "{:.2} IPIs per flush with memtier against {:.2} alone", per_flush(&driven), per_flush(&alone));
}

#[test]
fn a_kv_client_run_is_deterministic() {
    let a = run_checked(&kv(true), &[]);
    let b = run_checked(&kv(true), &[]);
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
}

#[test]
fn a_kv_client_names_a_kv_server_with_as_many_threads() {
    let bad = |text: String, needle: &str| {
        let e = swaplab_core::config::load(&text, "t.toml", &[]).expect_err("must be refused").to_string();
        assert!(e.contains(needle), "{e}");
    };
    bad(kv(true).replace("server = \"memcached\"", "server = \"nobody\""), "no other task named");
    bad(kv(true).replace("instances = 8\nthreads = true\n[[task.mapping]]\nname = \"buffers\"", "instances = 4\nthreads = true\n[[task.mapping]]\nname = \"buffers\""), "one connection per server thread");
    bad(kv(true).replace("server = \"memcached\"\n", ""), "needs `server`");
    bad(kv(true).replace("server = \"memcached\"\n", "server = \"memcached\"\nkeys = 5\n"), "belongs to the server's kv phases");
}

/// Guards the barrier between the fill and the gets (config `barrier`, engine/barrier.rs):
/// seed 004's fill and gets are two memtier runs, so no worker serves a get before every
/// worker has served its last set. Without the barrier the same workload lets a worker
/// whose fill ended early start its gets while others still fill (checked too, so the
/// workload does tell the two apart).
#[test]
fn the_gets_begin_when_every_worker_has_finished_the_fill() {
    let gets_start_and_fill_end = |text: &str| {
        let res = run_checked(text, &[]);
        let servers = side(&res, "memcached");
        let fill_end = servers.iter().map(|s| s.start_ns + s.phase_elapsed_ns[0]).max().unwrap();
        let gets_start = servers.iter().map(|s| s.end_ns - s.requests.as_ref().expect("gets").window_ns).min().unwrap();
        (gets_start, fill_end, res)
    };
    let with = kv(true).replace("pattern = \"kv-get\"", "barrier = true\npattern = \"kv-get\"");
    let (gets, fill, res) = gets_start_and_fill_end(&with);
    assert!(gets >= fill, "the first get began at {gets} ns, before the last set ended at {fill} ns");
    for s in side(&res, "memcached") {
        assert_eq!(s.requests.as_ref().map_or(0, |r| r.ops), 4_000, "{}: every get served after the barrier", s.name);
    }
    let (gets, fill, _) = gets_start_and_fill_end(&kv(true));
    assert!(gets < fill, "without the barrier a worker starts its gets at {gets} ns, before the last fill ends at {fill} ns");
}
