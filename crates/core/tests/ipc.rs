//! Message channels, many-reclaimer golden counters per bail-out variant, and the bail-out
//! bound (seed 001, issue 4).

use swaplab_core::config;
use swaplab_core::engine::Sim;
use swaplab_core::stats::result::SimResult;

/// A small hackbench: `groups` groups of 4 senders and 4 receivers, one socket per receiver,
/// `loops` messages from each sender to each receiver of its group; each process owns 64 KiB
/// of anonymous memory; `ram` decides the pressure.
fn hackbench(groups: u32, loops: u64, ram: &str, bailout: &str) -> String {
    hackbench_mem(groups, loops, ram, bailout, "64KiB")
}

fn hackbench_mem(groups: u32, loops: u64, ram: &str, bailout: &str, mem: &str) -> String {
    let n = groups * 4;
    format!(
        r#"
name = "hb-test"
seed = 5
[machine]
cpus = 2
ram = "{ram}"
kernel_reserved = "4MiB"
[kernel]
profile = "2.6.28"
bailout = "{bailout}"
[[swap]]
device = "sata-ssd"
size = "256MiB"
[[channel]]
name = "sock"
count = {n}
capacity = "16KiB"
overhead = 412
[[task]]
name = "sender"
instances = {n}
group_size = 4
[[task.mapping]]
name = "mem"
kind = "anon"
size = "{mem}"
[[task.phase]]
mapping = "mem"
pattern = "sequential"
[[task.phase]]
mapping = "mem"
pattern = "send"
channel = "sock"
index = "group"
fanout = 4
messages = {loops}
write_ratio = 0.0
[[task]]
name = "receiver"
instances = {n}
group_size = 4
[[task.mapping]]
name = "mem"
kind = "anon"
size = "{mem}"
[[task.phase]]
mapping = "mem"
pattern = "sequential"
[[task.phase]]
mapping = "mem"
pattern = "recv"
channel = "sock"
messages = {}
"#,
        loops * 4
    )
}

fn run(text: &str, overrides: &[String]) -> (SimResult, Vec<String>) {
    let r = config::load(text, "hb-test.toml", overrides).expect("valid workload");
    let mut sim = Sim::new(&r);
    sim.run(&mut |_| true);
    let errs = sim.check_invariants();
    (sim.result(), errs)
}

#[test]
fn every_message_is_delivered_and_memory_returns() {
    let (r, errs) = run(&hackbench(3, 20, "64MiB", "none"), &[]);
    assert!(errs.is_empty(), "{errs:?}");
    let sent: u64 = r.tasks.iter().map(|t| t.messages_sent).sum();
    let recvd: u64 = r.tasks.iter().map(|t| t.messages_received).sum();
    assert_eq!(sent, 12 * 20 * 4);
    assert_eq!(recvd, sent);
    assert_eq!(r.summary.messages, sent);
    assert!(r.summary.channel_pages_max > 0);
    assert!(r.tasks.iter().all(|t| !t.oom_killed));
}

#[test]
fn a_group_cannot_finish_before_its_slowest_member() {
    // One group: three senders write to both receivers; the third sender starts 50 ms late.
    // Each receiver needs every sender's messages, so neither can end before the late sender
    // has sent its last one, however fast the others are.
    let text = r#"
[machine]
cpus = 2
ram = "64MiB"
kernel_reserved = "4MiB"
[[channel]]
name = "sock"
count = 2
[[task]]
name = "sender"
instances = 2
[[task.mapping]]
name = "m"
kind = "anon"
size = "16KiB"
[[task.phase]]
mapping = "m"
pattern = "send"
channel = "sock"
index = "zero"
fanout = 2
messages = 100
[[task]]
name = "late"
start_delay = "50ms"
[[task.mapping]]
name = "m"
kind = "anon"
size = "16KiB"
[[task.phase]]
mapping = "m"
pattern = "send"
channel = "sock"
index = "zero"
fanout = 2
messages = 100
compute = "100us"
[[task]]
name = "receiver"
instances = 2
[[task.mapping]]
name = "m"
kind = "anon"
size = "16KiB"
[[task.phase]]
mapping = "m"
pattern = "recv"
channel = "sock"
messages = 300
"#;
    let (r, errs) = run(text, &[]);
    assert!(errs.is_empty(), "{errs:?}");
    let late = r.tasks.iter().find(|t| t.name == "late").unwrap();
    let fast_end = r.tasks.iter().filter(|t| t.name == "sender").map(|t| t.end_ns).max().unwrap();
    assert!(fast_end < 50_000_000, "the fast senders are done early ({fast_end})");
    assert!(late.end_ns > 50_000_000 + 200 * 100_000);
    for t in r.tasks.iter().filter(|t| t.name == "receiver") {
        assert_eq!(t.messages_received, 300);
        // The late sender's last message to this receiver leaves after 199 of its 100 us steps.
        let last_send = late.start_ns + 199 * 100_000;
        assert!(t.end_ns >= last_send, "receiver {} ended at {} before the slowest sender's last message ({last_send})", t.instance, t.end_ns);
        assert!(t.ipc_wait_ns > 40_000_000, "the receiver waited (without CPU) for the late sender");
    }
    assert_eq!(r.elapsed_ns, r.tasks.iter().map(|t| t.end_ns).max().unwrap());
}

#[test]
fn receivers_waiting_for_messages_never_sent_are_rejected() {
    let text = hackbench(1, 10, "64MiB", "none").replace("messages = 40\n", "messages = 41\n");
    let e = config::load(&text, "x.toml", &[]).unwrap_err();
    assert!(e.message.contains("block forever"), "{e}");
}

#[test]
fn channel_indices_are_checked() {
    let text = hackbench(2, 10, "64MiB", "none").replace("count = 8\n", "count = 4\n");
    let e = config::load(&text, "x.toml", &[]).unwrap_err();
    assert!(e.key.contains("index"), "{e}");
}

#[test]
fn message_fields_are_checked_where_they_belong() {
    let base = hackbench(1, 10, "64MiB", "none");
    // A phase names a channel array that was never declared.
    let e = config::load(&base.replace("channel = \"sock\"\nindex", "channel = \"pipe\"\nindex"), "x.toml", &[]).unwrap_err();
    assert!(e.key.ends_with(".channel") && e.message.contains("declared: sock"), "{e}");
    // A touch phase carries a message field.
    let e = config::load(&base.replacen("pattern = \"sequential\"", "pattern = \"sequential\"\nmessages = 3", 1), "x.toml", &[]).unwrap_err();
    assert!(e.key.ends_with(".messages") && e.message.contains("belongs to message phases"), "{e}");
    // A receiver is given a fan-out.
    let e = config::load(&base.replace("pattern = \"recv\"", "pattern = \"recv\"\nfanout = 2"), "x.toml", &[]).unwrap_err();
    assert!(e.key.ends_with(".fanout") && e.message.contains("send phases"), "{e}");
    // Two channel arrays with one name.
    let twice = base.replace("[[channel]]", "[[channel]]\nname = \"sock\"\ncount = 1\ncapacity = \"4KiB\"\n[[channel]]");
    let e = config::load(&twice, "x.toml", &[]).unwrap_err();
    assert_eq!(e.key, "channel.1.name", "{e}");
}

/// Golden counters of a small many-reclaimer run, per bail-out variant: 48 processes of 512 KiB each in 16 MiB (12 MiB managed).
fn pressured(bailout: &str) -> SimResult {
    let (r, errs) = run(&hackbench_mem(6, 40, "16MiB", bailout, "512KiB"), &[]);
    assert!(errs.is_empty(), "{bailout}: {errs:?}");
    r
}

#[test]
fn golden_many_reclaimers_per_variant() {
    let mut lines = Vec::new();
    for b in ["none", "rvr", "kosaki", "proportional"] {
        let r = pressured(b);
        let v = &r.vmstat;
        let max_pages = r.tasks.iter().map(|t| t.direct_reclaim.pages_per_call_pct.max).max().unwrap_or(0);
        lines.push(format!(
            "{b}: elapsed_ns={} allocstall={} pgscan_direct={} pgsteal_direct={} pswpout={} max_pages_per_call={max_pages}",
            r.elapsed_ns, v["allocstall"], v["pgscan_direct"], v["pgsteal_direct"], v["pswpout"]
        ));
        assert!(v["allocstall"] > 0, "{b}: the run must reclaim directly");
    }
    let got = lines.join("\n") + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ipc_many_reclaimers.txt");
    // The same rule as golden.rs: only SWAPLAB_BLESS (non-empty, not "0") writes the file; a
    // missing golden fails.
    if std::env::var("SWAPLAB_BLESS").is_ok_and(|v| !v.is_empty() && v != "0") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!("no golden file {}; create it with SWAPLAB_BLESS=1 cargo test --release -p swaplab-core --test ipc", path.display())
    });
    assert_eq!(got, want, "golden counters changed (rerun with SWAPLAB_BLESS=1 if intended)");
}

#[test]
fn kosaki_never_reclaims_more_than_swap_cluster_max_plus_a_batch() {
    let r = pressured("kosaki");
    // SWAP_CLUSTER_MAX (32) + one batch of 32 per list that can reclaim (inactive anon and
    // inactive file) in the round that crossed the goal.
    for t in &r.tasks {
        let m = t.direct_reclaim.pages_per_call_pct.max;
        assert!(m <= 32 + 2 * 32, "{}#{}: a direct reclaim call took {m} pages", t.name, t.instance);
    }
}

/// A channel's `footprint` (the slab bytes a queued message holds, beyond what the sndbuf
/// accounts: 2.6.28's truesize left out `skb_shared_info` and slab rounding) is held as
/// unreclaimable kernel memory, while the sndbuf still admits the same messages.
#[test]
fn socket_footprint_beyond_truesize_is_held_as_kernel_memory() {
    let accounted = hackbench(3, 40, "64MiB", "none");
    let slab = accounted.replace("overhead = 412", "overhead = 412\nfootprint = \"1536B\"");
    assert_ne!(accounted, slab);
    let (a, errs_a) = run(&accounted, &[]);
    let (s, errs_s) = run(&slab, &[]);
    assert!(errs_a.is_empty() && errs_s.is_empty(), "{errs_a:?} {errs_s:?}");
    assert_eq!(a.summary.messages, s.summary.messages);
    // 16 KiB of sndbuf admits 32 messages of 512 accounted bytes: 4 pages at 512 B each,
    // 12 pages at 1536 B each, per full socket.
    assert!(s.summary.channel_pages_max >= 2 * a.summary.channel_pages_max,
        "footprint pages {} vs accounted {}", s.summary.channel_pages_max, a.summary.channel_pages_max);
    assert!(s.tasks.iter().all(|t| !t.oom_killed));
}

#[test]
fn a_zero_footprint_is_rejected() {
    let text = hackbench(1, 1, "64MiB", "none").replace("overhead = 412", "overhead = 412\nfootprint = \"0B\"");
    let err = config::load(&text, "hb-test.toml", &[]).expect_err("zero footprint");
    assert!(err.to_string().contains("footprint"), "{err}");
}

/// When the last reader of a socket exits, its queued messages are freed at once
/// (`unix_release_sock` purges `sk_receive_queue`), and the writers blocked on the full socket
/// are woken to EPIPE and die of SIGPIPE, instead of holding the socket's kernel pages until
/// the run ends.
#[test]
fn a_socket_whose_last_reader_exits_frees_its_queue_and_its_writers_die_of_sigpipe() {
    // Each receiver reads 10 of the 160 messages its group's senders write to it; a 16 KiB
    // socket holds 32, so the senders block on full sockets when the receivers exit.
    let text = hackbench(1, 40, "64MiB", "none").replace("messages = 160\n", "messages = 10\n");
    let r = config::load(&text, "hb-test.toml", &[]).expect("valid workload");
    let mut sim = Sim::new(&r);
    sim.run(&mut |_| true);
    let errs = sim.check_invariants();
    assert!(errs.is_empty(), "{errs:?}");
    assert_eq!(sim.ipc.kernel_pages, 0, "the closed sockets' queued messages were freed");
    let res = sim.result();
    let sigpipes: Vec<&str> = res.events.iter().filter(|e| e.kind == "sigpipe").map(|e| e.task.as_str()).collect();
    assert_eq!(sigpipes.len(), 4, "every sender dies of SIGPIPE: {:?}", res.events);
    assert!(sigpipes.iter().all(|t| t.starts_with("sender")), "{sigpipes:?}");
    assert!(res.events.iter().all(|e| e.kind != "ipc_deadlock"), "{:?}", res.events);
    assert_eq!(res.tasks.iter().filter(|t| t.name == "receiver").map(|t| t.messages_received).sum::<u64>(), 40);
}
