//! The operations a program performs besides page touches ([`crate::workload::Op`]): messages
//! through channels (pipes, AF_UNIX sockets) and buffered file I/O through the page cache.
//!
//! **Channels.** A channel is a bounded FIFO of messages. `send` costs `costs.msg_send_ns`
//! (the write()/sendmsg() syscall, the copy, the wake-up of a waiting reader); when the message
//! does not fit in the channel's capacity (and the channel is not empty) the sender blocks, as
//! `sock_alloc_send_pskb` / `pipe_write` do, until a reader has drained the channel to half its
//! capacity (`sock_writeable`: in-flight bytes below half the sndbuf). `recv` costs
//! `costs.msg_recv_ns`; on an empty channel the receiver blocks, using no CPU, until a message
//! arrives (one waiting receiver is woken per message, as the exclusive wait of
//! `unix_stream_data_wait` / `pipe_read` wakes readers).
//!
//! **Kernel memory of messages.** What a sender may queue is bounded by what the socket
//! *accounts* (payload + `overhead` per message, against `capacity`: `sk_wmem_alloc` against
//! `sk_sndbuf`); what the queued messages *hold* is their slab footprint (`footprint` per
//! message where the channel sets it, else the accounted bytes). Before Linux 3.2 an skb's
//! truesize left out its `skb_shared_info` and the slab rounding, so a full 2.6.28 socket of
//! 100-byte messages holds about twice its sndbuf — unreclaimable memory the kernel of that
//! era did not see in the limit. The held bytes occupy ceil(held / 4096) kernel pages. The sender
//! allocates a page through the page allocator whenever the in-flight bytes cross a page
//! boundary — so a send can enter direct reclaim, as `alloc_skb` and `pipe_write`'s
//! `alloc_page` do — and the receiver frees pages as it consumes data. The pages are charged
//! like any other page but are on no LRU list: reclaim cannot take them; only consumption frees
//! them, or the exit of the channel's last reader, which throws the queue away
//! ([`Sim::ipc_reader_exit`]). (Slab packing of many small skbs into one page is what the page
//! rounding stands for.)
//!
//! **Buffered file I/O** (`access = "syscall"`): read()/write() of one page of a file through
//! the page cache. A cached page is marked accessed in software (`folio_mark_accessed`,
//! kernel-algorithms.md §3.10: PG_referenced, then activation on the second access). A read
//! is the page cache's (`Sim::filemap_read` in pagecache/: readahead, sleeping on the page);
//! a full-page write of a missing page allocates it and needs no read; a write dirties the
//! page and may throttle the writer (writeback/). No page-table entry is made, so reclaim sees
//! these pages only through their flags.
//!
//! **kv connections** (a kv store and its client, `pattern = "kv-client"`) are in kv_conn.rs.
//!
//! **Deadlock.** When every unfinished user task waits on a channel, nothing can wake them:
//! they are finished at their clocks and an `ipc_deadlock` event is recorded per task.

use super::fault::Outcome;
use super::memory::Alloc;
use super::{Sim, TState, TaskKind};
use crate::config::Config;
use crate::mm::*;
use crate::workload::{Op, Touch};
use std::collections::VecDeque;

/// One channel's state.
#[derive(Clone, Debug, Default)]
pub struct Channel {
    pub capacity: u64,
    pub overhead: u64,
    /// Slab bytes one message holds while queued (None: its accounted size).
    pub footprint: Option<u64>,
    /// Bytes in flight as the socket accounts them (payload + overhead).
    pub used: u64,
    /// Bytes the queued messages hold in kernel memory (their footprints).
    pub held: u64,
    /// The queued messages: accounted size, held bytes, and the sender's clock when it was sent.
    /// A task may run ahead of others by more than the sync quantum when no event bounds it,
    /// so a receiver's clock is raised to the send time: no message is read before it exists.
    pub queue: VecDeque<(u32, u32, u64)>,
    /// Kernel pages holding the bytes in flight.
    pub frames: Vec<u32>,
    pub recv_waiters: VecDeque<u32>,
    pub send_waiters: Vec<u32>,
    /// Tasks holding the receiving end that have not exited: every task with a `recv` phase
    /// on the channel (counted when the tasks are built).
    pub readers: u32,
    /// The last reader exited (see [`Sim::ipc_reader_exit`]): the queue is gone and a send is
    /// EPIPE.
    pub closed: bool,
}

/// All channels of a run (global ids: the `[[channel]]` arrays in file order).
#[derive(Clone, Debug, Default)]
pub struct IpcState {
    pub chans: Vec<Channel>,
    pub messages: u64,
    /// Kernel pages currently held by channels, and the most ever held.
    pub kernel_pages: u64,
    pub kernel_pages_max: u64,
}

impl IpcState {
    pub fn new(cfg: &Config) -> IpcState {
        let mut chans = Vec::new();
        for c in &cfg.channels {
            for _ in 0..c.count {
                chans.push(Channel {
                    capacity: c.capacity.0,
                    overhead: c.overhead.0,
                    footprint: c.footprint.map(|f| f.0),
                    ..Channel::default()
                });
            }
        }
        IpcState { chans, ..IpcState::default() }
    }
}

impl Sim {
    /// Perform one operation of task `tid` on `cpu`. On `Blocked` the operation is kept in
    /// `pending_op` and retried when the task runs again.
    pub(crate) fn run_op(&mut self, tid: u32, cpu: usize, op: Op) -> Outcome {
        let out = match op {
            Op::Send { chan, bytes } => self.ipc_send(tid, cpu, chan as usize, bytes),
            Op::Recv { chan } => self.ipc_recv(tid, chan as usize),
            Op::FileIo { mi, touch } => self.file_io(tid, cpu, mi, touch),
            Op::Request { bytes } => self.kv_request(tid, bytes),
            Op::KvClient => self.kv_client_step(tid),
            Op::Barrier { phase } => {
                if self.barrier_arrive(tid, phase) {
                    Outcome::Done
                } else {
                    Outcome::Blocked
                }
            }
        };
        if let Outcome::Blocked = out {
            self.tasks[tid as usize].pending_op = Some(op);
        }
        out
    }

    pub(super) fn ipc_block(&mut self, tid: u32) {
        let t = &mut self.tasks[tid as usize];
        t.state = TState::Blocked;
        t.ipc_wait_since = Some(t.clock);
    }

    /// Wake a task waiting on a channel (no-op for one that was killed meanwhile).
    pub(super) fn ipc_wake(&mut self, w: u32, at: u64) -> bool {
        let t = &mut self.tasks[w as usize];
        let Some(since) = t.ipc_wait_since.take() else { return false };
        if t.state != TState::Blocked {
            return false;
        }
        t.ipc_wait_ns += at.saturating_sub(since);
        self.wake(w, at);
        true
    }

    fn ipc_send(&mut self, tid: u32, cpu: usize, chan: usize, bytes: u32) -> Outcome {
        if self.ipc.chans[chan].closed {
            return self.ipc_sigpipe(tid, cpu);
        }
        let ch = &mut self.ipc.chans[chan];
        let size = bytes as u64 + ch.overhead;
        let held = ch.footprint.unwrap_or(size);
        if ch.used > 0 && ch.used + size > ch.capacity {
            ch.send_waiters.push(tid);
            self.ipc_block(tid);
            return Outcome::Blocked;
        }
        // Kernel pages for the bytes in flight (alloc_skb / pipe buffer page).
        let need = (ch.held + held).div_ceil(PAGE_SIZE) as usize;
        while self.ipc.chans[chan].frames.len() < need {
            match self.alloc_page(tid, cpu) {
                Alloc::Frame(f) => {
                    self.ipc.chans[chan].frames.push(f);
                    self.ipc.kernel_pages += 1;
                    self.ipc.kernel_pages_max = self.ipc.kernel_pages_max.max(self.ipc.kernel_pages);
                    self.tasks[tid as usize].clock += self.costs.alloc_page_ns;
                }
                Alloc::Blocked => return Outcome::Blocked,
                Alloc::Killed => return Outcome::Killed,
            }
        }
        let t = &mut self.tasks[tid as usize];
        t.clock += self.costs.msg_send_ns;
        let sent_at = t.clock;
        let ch = &mut self.ipc.chans[chan];
        ch.used += size;
        ch.held += held;
        ch.queue.push_back((size as u32, held as u32, sent_at));
        self.ipc.messages += 1;
        let t = &mut self.tasks[tid as usize];
        t.messages_sent += 1;
        let at = t.clock;
        while let Some(w) = self.ipc.chans[chan].recv_waiters.pop_front() {
            if self.ipc_wake(w, at) {
                break;
            }
        }
        Outcome::Done
    }

    fn ipc_recv(&mut self, tid: u32, chan: usize) -> Outcome {
        let ch = &mut self.ipc.chans[chan];
        let Some((size, held, sent_at)) = ch.queue.pop_front() else {
            ch.recv_waiters.push_back(tid);
            self.ipc_block(tid);
            return Outcome::Blocked;
        };
        ch.used -= size as u64;
        ch.held -= held as u64;
        let keep = ch.held.div_ceil(PAGE_SIZE) as usize;
        let writable = ch.used * 2 <= ch.capacity && !ch.send_waiters.is_empty();
        while self.ipc.chans[chan].frames.len() > keep {
            let f = self.ipc.chans[chan].frames.pop().expect("len > keep");
            self.free_frame(f);
            self.ipc.kernel_pages -= 1;
        }
        let t = &mut self.tasks[tid as usize];
        if sent_at > t.clock {
            t.ipc_wait_ns += sent_at - t.clock;
            t.clock = sent_at;
        }
        t.clock += self.costs.msg_recv_ns;
        t.messages_received += 1;
        let at = t.clock;
        if writable {
            // sk_write_space: every blocked writer of the socket is woken.
            let ws = std::mem::take(&mut self.ipc.chans[chan].send_waiters);
            for w in ws {
                self.ipc_wake(w, at);
            }
        }
        Outcome::Done
    }

    /// Buffered read()/write() of one page of file mapping `mi` (generic_file_read_iter /
    /// generic_perform_write through the page cache).
    fn file_io(&mut self, tid: u32, cpu: usize, mi: usize, touch: Touch) -> Outcome {
        let v = self.tasks[tid as usize].vmas[mi] as usize;
        let obj = self.mem.vmas[v].object as usize;
        let page = touch.page as usize;
        let cost = self.costs.syscall_page_ns;
        if !touch.write {
            // generic_file_read_iter through the page cache, with readahead (pagecache/), as
            // a request with the phase's I/O depth (engine/requests.rs).
            let out = self.read_request(tid, cpu, obj, page as u64);
            if let Outcome::Done = out {
                let t = &mut self.tasks[tid as usize];
                t.touches += 1;
                t.file_reads += 1;
            }
            return out;
        }
        let ent = self.mem.objects[obj].entries[page];
        if ent & PTE_PRESENT != 0 {
            let f = pte_frame(ent);
            if self.mem.frames[f as usize].has(PG_LOCKED) {
                // Read in flight (a reader's readahead): sleep on the folio lock.
                self.wait_on_frame(tid, f);
                return Outcome::Blocked;
            }
            self.mark_page_accessed(f);
            let dirtied = self.folio_mark_dirty(f);
            let t = &mut self.tasks[tid as usize];
            t.clock += cost;
            t.touches += 1;
            t.file_writes += 1;
            self.balance_dirty_pages_ratelimited(tid, dirtied);
            return Outcome::Done;
        }
        let f = match self.alloc_page(tid, cpu) {
            Alloc::Frame(f) => f,
            Alloc::Blocked => return Outcome::Blocked,
            Alloc::Killed => return Outcome::Killed,
        };
        let fr = &mut self.mem.frames[f as usize];
        fr.set_owner(Owner::File, obj as u32, touch.page);
        if ent & ENT_SHADOW != 0 {
            self.refault_in(f, ent as u32, false, false);
        }
        self.mem.objects[obj].entries[page] = PTE_PRESENT | f as u64;
        self.lru_add_outside_fault(f);
        self.tasks[tid as usize].clock += self.costs.new_page_write_ns;
        // A whole-page write needs no read: the new page is dirty and accessed.
        let dirtied = self.folio_mark_dirty(f);
        self.mark_page_accessed(f);
        let t = &mut self.tasks[tid as usize];
        t.clock += cost;
        t.touches += 1;
        t.file_writes += 1;
        self.balance_dirty_pages_ratelimited(tid, dirtied);
        Outcome::Done
    }

    /// Count each channel's readers (after the tasks are built).
    pub(super) fn ipc_count_readers(&mut self) {
        if self.ipc.chans.is_empty() {
            return;
        }
        for t in &self.tasks {
            for c in t.program.as_ref().map(|p| p.recv_channels()).unwrap_or_default() {
                self.ipc.chans[c as usize].readers += 1;
            }
        }
    }

    /// Task `tid` exited (or was killed): it closes the receiving ends it held. When the last
    /// reader of a channel is gone the queued messages are freed at once, as 2.6.28's
    /// `unix_release_sock` (net/unix/af_unix.c, the same in 6.x) empties the closing socket's
    /// `sk_receive_queue` with `kfree_skb`; it sets the peer's `sk_shutdown` to SHUTDOWN_MASK and
    /// wakes its waiters, so a blocked writer returns from `sock_alloc_send_pskb` with EPIPE.
    /// (A pipe keeps its buffers until its writers are gone too, `pipe_release`; its writers get
    /// EPIPE on their next write all the same, so the buffers go with them. The model frees
    /// them with the last reader for both.)
    pub(super) fn ipc_reader_exit(&mut self, tid: u32) {
        if self.ipc.chans.is_empty() {
            return;
        }
        let at = self.tasks[tid as usize].clock;
        for c in self.tasks[tid as usize].program.as_ref().map(|p| p.recv_channels()).unwrap_or_default() {
            let ch = &mut self.ipc.chans[c as usize];
            ch.readers -= 1;
            if ch.readers > 0 {
                continue;
            }
            ch.closed = true;
            ch.queue.clear();
            (ch.used, ch.held) = (0, 0);
            for f in std::mem::take(&mut ch.frames) {
                self.free_frame(f);
                self.ipc.kernel_pages -= 1;
            }
            for w in std::mem::take(&mut self.ipc.chans[c as usize].send_waiters) {
                self.ipc_wake(w, at);
            }
        }
    }

    /// A write to a channel whose readers have all exited: EPIPE and SIGPIPE
    /// (`unix_stream_sendmsg`'s `pipe_err`, `pipe_write`), whose default action ends the
    /// writer, as it ends hackbench's senders (they write without MSG_NOSIGNAL).
    fn ipc_sigpipe(&mut self, tid: u32, cpu: usize) -> Outcome {
        let label = self.tasks[tid as usize].label();
        self.record_event("sigpipe", label, 0, 0);
        self.finish_task(tid, cpu, false);
        Outcome::Killed
    }

    /// Finish the tasks that wait on channels when no unfinished user task can wake them.
    pub(crate) fn ipc_check_deadlock(&mut self) {
        if self.ipc.chans.is_empty() {
            return;
        }
        let mut waiting = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if t.kind != TaskKind::User || t.state == TState::Done {
                continue;
            }
            if t.ipc_wait_since.is_none() || t.state != TState::Blocked {
                return;
            }
            waiting.push(i as u32);
        }
        for w in waiting {
            let label = self.tasks[w as usize].label();
            self.record_event("ipc_deadlock", label, 0, 0);
            self.tasks[w as usize].ipc_wait_since = None;
            self.finish_task(w, usize::MAX, false);
        }
    }
}
