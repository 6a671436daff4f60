//! A kv store's connections: a memtier-like client task (`pattern = "kv-client"`) and the
//! memcached worker it talks to, exchanging batches of requests and replies over a UNIX
//! stream socket, each side blocking while the other works.
//!
//! Seed 004 runs `memtier_benchmark -S <socket> -c 1 -t 36 --pipeline 8` against
//! `memcached -t 36`, every process bound to node 0's 36 CPUs: 36 connections, which
//! memcached's dispatcher hands to its 36 workers round robin (`dispatch_conn_new`), so
//! client thread i talks to worker i alone.
//!
//! **Client** (memtier's `shard_connection`): it keeps `pipeline` requests outstanding. Each
//! step is one socket call: read every reply that has arrived (`process_response`), else
//! create and send requests until `pipeline` are outstanding (`fill_pipeline`: one write()
//! for the batch), else wait on the socket (libevent's `epoll_wait`: asleep, off the CPU).
//! It pays `kv_client_request_ns` per request it creates, `msg_send_ns` per write and
//! `msg_recv_ns` per read. It ends when its server has served its last kv phase and closed
//! the connection.
//!
//! **Server** (memcached 1.6's connection state machine): a worker reads everything queued on
//! its socket (`try_read_network`, one read()), serves the requests one after another
//! (`process_command`: the item's pages are the request's touches), and when its read buffer
//! is empty transmits every reply built meanwhile in one sendmsg() (`conn_mwrite`); then it
//! reads again, or, with nothing queued, goes back to `epoll_wait` and sleeps.
//!
//! **Why it matters for reclaim.** A worker asleep in `epoll_wait` is not running the mm, so
//! a TLB shootdown after reclaim unmaps memcached's pages does not interrupt its CPU:
//! x86 before 6.12 takes a CPU out of the old mm's `mm_cpumask` when it switches to another
//! mm (the client's; `switch_mm_irqs_off`), and an idle CPU is lazy and skipped
//! (`tlb_is_not_lazy`, reclaim/tlb_flush.rs). How many CPUs a flush interrupts follows how
//! many workers are serving at that moment, not how many exist.
//!
//! Counted on the tasks: `messages_sent` / `messages_received` (socket writes and reads),
//! `ipc_wait_ns` (time asleep on the connection).

use super::fault::Outcome;
use super::Sim;
use crate::config::{PatternKind, Resolved};

/// One connection's state. Request counts, not bytes: a batch of 8 GETs (~64 bytes each) or
/// of 8 replies (~2 KiB each) never fills a UNIX socket's 208 KiB send buffer, so neither side
/// blocks on a full socket.
#[derive(Clone, Debug, Default)]
pub struct KvConn {
    pub server: u32,
    pub client: u32,
    /// The client's `--pipeline`.
    pipeline: u32,
    /// Requests on the socket the server has not read.
    queued: u32,
    /// Requests read into the worker's buffer, not yet served.
    read: u32,
    /// The request being served (its touches run until the worker's next step).
    serving: bool,
    /// Replies built and not yet transmitted.
    built: u32,
    /// Replies on the socket the client has not read.
    replies: u32,
    /// Requests the client sent and has no reply to yet.
    outstanding: u32,
    /// The server has served its kv phases.
    closed: bool,
    /// The client has ended (killed, or out of time): the worker serves on without it.
    client_gone: bool,
    server_waiting: bool,
    client_waiting: bool,
}

/// Every connection of the run, and which one a task holds.
#[derive(Clone, Debug, Default)]
pub struct KvConns {
    pub conns: Vec<KvConn>,
    by_task: Vec<Option<u32>>,
}

impl KvConns {
    /// One connection per kv-client instance, to the same instance of its server task
    /// (`first_tid[ti]`: the task id of task ti's first instance).
    pub fn new(cfg: &Resolved, first_tid: &[u32], ntasks: usize) -> KvConns {
        let tasks = &cfg.config.tasks;
        let mut out = KvConns { conns: Vec::new(), by_task: vec![None; ntasks] };
        for (ti, t) in tasks.iter().enumerate() {
            let Some(ph) = t.phases.iter().find(|p| p.pattern == PatternKind::KvClient) else { continue };
            let server = ph.server.as_ref().expect("validated: kv-client names its server");
            let si = tasks.iter().position(|s| &s.name == server).expect("validated: server exists");
            for inst in 0..t.instances {
                let (client, srv) = (first_tid[ti] + inst, first_tid[si] + inst);
                let id = out.conns.len() as u32;
                out.conns.push(KvConn { server: srv, client, pipeline: ph.pipeline.unwrap_or(1).max(1), ..KvConn::default() });
                out.by_task[client as usize] = Some(id);
                out.by_task[srv as usize] = Some(id);
            }
        }
        out
    }

    fn of(&self, tid: u32) -> Option<usize> {
        self.by_task.get(tid as usize).copied().flatten().map(|c| c as usize)
    }
}

/// What a worker does before it can serve its next request.
enum ServerStep {
    /// A request from its read buffer.
    Serve,
    /// Transmit the replies built (one sendmsg()).
    Transmit,
    /// Read what is queued on the socket (one read()).
    Read,
    /// Nothing queued: sleep in `epoll_wait`.
    Wait,
}

impl Sim {
    /// Does task `tid` serve a kv-client's connection (and is that client still there)?
    pub(crate) fn kv_driven(&self, tid: u32) -> bool {
        self.kv_conns.of(tid).is_some_and(|c| self.kv_conns.conns[c].server == tid && !self.kv_conns.conns[c].client_gone)
    }

    /// The worker is about to begin a request: the previous one is served; transmit, read or
    /// sleep until one is in its read buffer. `Done` with a request taken from the buffer.
    pub(crate) fn kv_server_next(&mut self, tid: u32) -> Outcome {
        let c = self.kv_conns.of(tid).expect("a driven server");
        let conn = &mut self.kv_conns.conns[c];
        if std::mem::take(&mut conn.serving) {
            conn.built += 1;
        }
        loop {
            let conn = &self.kv_conns.conns[c];
            let step = if conn.read > 0 {
                ServerStep::Serve
            } else if conn.built > 0 {
                ServerStep::Transmit
            } else if conn.queued > 0 {
                ServerStep::Read
            } else {
                ServerStep::Wait
            };
            match step {
                ServerStep::Serve => {
                    let conn = &mut self.kv_conns.conns[c];
                    conn.read -= 1;
                    conn.serving = true;
                    return Outcome::Done;
                }
                ServerStep::Transmit => self.kv_transmit(c, true),
                ServerStep::Read => {
                    let conn = &mut self.kv_conns.conns[c];
                    conn.read = std::mem::take(&mut conn.queued);
                    let t = &mut self.tasks[tid as usize];
                    t.clock += self.costs.msg_recv_ns;
                    t.messages_received += 1;
                }
                ServerStep::Wait => {
                    self.kv_conns.conns[c].server_waiting = true;
                    self.ipc_block(tid);
                    return Outcome::Blocked;
                }
            }
        }
    }

    /// A worker stops serving for a while (a barrier, engine/barrier.rs): the request it was
    /// serving is done and the replies it built go out.
    pub(crate) fn kv_server_idle(&mut self, tid: u32) {
        if !self.kv_driven(tid) {
            return;
        }
        let c = self.kv_conns.of(tid).expect("a driven server");
        let conn = &mut self.kv_conns.conns[c];
        if std::mem::take(&mut conn.serving) {
            conn.built += 1;
        }
        if conn.built > 0 {
            self.kv_transmit(c, true);
        }
    }

    /// The server sends the replies it built (`send`: one sendmsg() on its clock; false: it
    /// was killed and sends nothing) and wakes its client if it waits.
    fn kv_transmit(&mut self, c: usize, send: bool) {
        let conn = &mut self.kv_conns.conns[c];
        conn.replies += std::mem::take(&mut conn.built);
        let (server, client) = (conn.server, conn.client);
        let t = &mut self.tasks[server as usize];
        if send {
            t.clock += self.costs.msg_send_ns;
            t.messages_sent += 1;
        }
        let at = t.clock;
        if std::mem::take(&mut self.kv_conns.conns[c].client_waiting) {
            self.ipc_wake(client, at);
        }
    }

    /// Task `tid` is ending. A server's last replies go out (`send`: it is not killed) and the
    /// connection closes, which ends its client; a client that ends first leaves its worker to
    /// serve on without it.
    pub(crate) fn kv_task_done(&mut self, tid: u32, send: bool) {
        let Some(c) = self.kv_conns.of(tid) else { return };
        let conn = &mut self.kv_conns.conns[c];
        if conn.client == tid {
            conn.client_gone = true;
            let server = conn.server;
            if std::mem::take(&mut conn.server_waiting) {
                let at = self.tasks[tid as usize].clock;
                self.ipc_wake(server, at);
            }
            return;
        }
        if std::mem::take(&mut conn.serving) {
            conn.built += 1;
        }
        conn.closed = true;
        if !send {
            conn.built = 0;
        }
        // A client waiting on the socket wakes to the replies or to the close.
        let send = conn.built > 0;
        self.kv_transmit(c, send);
    }

    /// The client's next socket call: read the replies, fill the pipeline, or wait.
    pub(crate) fn kv_client_step(&mut self, tid: u32) -> Outcome {
        let c = self.kv_conns.of(tid).expect("validated: a kv-client holds a connection");
        let conn = &mut self.kv_conns.conns[c];
        if conn.replies > 0 {
            // memtier's read callback: every reply that arrived, one read().
            conn.outstanding -= std::mem::take(&mut conn.replies);
            let t = &mut self.tasks[tid as usize];
            t.clock += self.costs.msg_recv_ns;
            t.messages_received += 1;
            return Outcome::Done;
        }
        if conn.closed {
            self.tasks[tid as usize].program.as_mut().expect("user task").end_phase();
            return Outcome::Done;
        }
        if conn.outstanding < conn.pipeline {
            let n = conn.pipeline - conn.outstanding;
            conn.outstanding += n;
            conn.queued += n;
            let server = conn.server;
            let wake = std::mem::take(&mut conn.server_waiting);
            let t = &mut self.tasks[tid as usize];
            t.clock += n as u64 * self.costs.kv_client_request_ns + self.costs.msg_send_ns;
            t.messages_sent += 1;
            let at = t.clock;
            if wake {
                self.ipc_wake(server, at);
            }
            return Outcome::Done;
        }
        conn.client_waiting = true;
        self.ipc_block(tid);
        Outcome::Blocked
    }
}
