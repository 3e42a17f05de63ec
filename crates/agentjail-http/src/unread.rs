//! The server-wide budget for responses produced and not yet taken by their clients
//! (`--unread-budget`).
//!
//! A response is whole in memory once its handler returns (a record, a file), and hyper
//! holds it until the socket takes it. One client that stops reading holds one response;
//! many together could hold any amount, so the bytes held are counted over all connections:
//! a response's body bytes when it is handed to hyper, less what each connection's socket
//! has taken since. Past the budget the *stalled* connections are dropped, longest stalled
//! first (whose socket took nothing for the longest time), their held responses freed, until
//! the total is within the budget again.
//!
//! Stalled means: it holds response bytes, and its socket has taken less than
//! [`PROGRESS_BYTES`] of them for [`STALL`] (counted from when it was given a response, if
//! it held none before). A client that is reading its answer is never dropped for what
//! another answer pushed over the budget: the soak (scripts/soak-http.py) once saw a client
//! reading a 900 KB record dropped because the only other connection holding bytes, a
//! silent one, had just been answered. A reader keeps its connection only by taking bytes:
//! 16 KiB a second is not stalled, one byte a second is. The budget is checked when a
//! response is handed over and every [`SWEEP`] (a response that is still held when its
//! client stalls is dropped then); until a check finds the readers stalled, the total may
//! exceed the budget by what readers hold and by the responses of the last [`STALL`].
//! Each drop is a line on stderr and `agentjail_http_unread_dropped_total`.
//!
//! A job the dropped connection had already pipelined is not stopped (as for a client that
//! hangs up, REFERENCE "HTTP"): it ends within the policy's limits and its answer is dropped.

use std::collections::HashMap;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long a connection holding response bytes may take (nearly) none of them before the
/// budget may drop it.
pub const STALL: Duration = Duration::from_secs(1);

/// What a socket must take to count as progress: a socket that takes a byte at a time keeps
/// nothing alive. A reading client's socket takes a buffer's worth (tens of KiB) at once.
pub const PROGRESS_BYTES: usize = 16 << 10;

/// How often the budget is checked besides when a response is handed over.
pub const SWEEP: Duration = Duration::from_millis(250);

/// One connection's share.
pub struct ConnOut {
    id: u64,
    /// Response bytes handed to hyper and not yet taken by the socket.
    pending: AtomicUsize,
    /// When this connection's socket last made progress: took [`PROGRESS_BYTES`] since the
    /// last mark, or all it held; or when it was given a response while holding none.
    progress: Mutex<Instant>,
    /// Bytes taken since `progress` was last marked.
    taken: AtomicUsize,
    dropped: AtomicBool,
    /// Told once when the budget drops this connection.
    pub drop: tokio::sync::Notify,
}

pub struct Unread {
    pub budget: usize,
    /// [`STALL`], but for the unit tests.
    stall: Duration,
    total: AtomicUsize,
    next: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<ConnOut>>>,
    /// Connections dropped for the budget, ever.
    pub dropped: AtomicU64,
}

impl Unread {
    pub fn new(budget: usize) -> Unread {
        Unread {
            budget,
            stall: STALL,
            total: AtomicUsize::new(0),
            next: AtomicU64::new(1),
            conns: Mutex::new(HashMap::new()),
            dropped: AtomicU64::new(0),
        }
    }

    /// Bytes held now, over all connections.
    pub fn held(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    /// A new connection's share, counted until [`Unread::forget`].
    pub fn open(&self) -> Arc<ConnOut> {
        let c = Arc::new(ConnOut {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            pending: AtomicUsize::new(0),
            progress: Mutex::new(Instant::now()),
            taken: AtomicUsize::new(0),
            dropped: AtomicBool::new(false),
            drop: tokio::sync::Notify::new(),
        });
        self.lock().insert(c.id, Arc::clone(&c));
        c
    }

    /// The connection has ended: what it held is freed.
    pub fn forget(&self, c: &ConnOut) {
        self.lock().remove(&c.id);
        self.release(c, usize::MAX);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnOut>>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Take up to `n` of `c`'s bytes off the count.
    fn release(&self, c: &ConnOut, n: usize) {
        let mut cur = c.pending.load(Ordering::SeqCst);
        loop {
            let take = cur.min(n);
            if take == 0 {
                return;
            }
            match c
                .pending
                .compare_exchange(cur, cur - take, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    self.total.fetch_sub(take, Ordering::SeqCst);
                    return;
                }
                Err(now) => cur = now,
            }
        }
    }

    /// `c` was given a response of `n` body bytes to send; past the budget, drop the
    /// stalled connections, longest stalled first (never `c`). Returns how many were dropped.
    pub fn produced(&self, c: &ConnOut, n: usize) -> usize {
        if c.pending.fetch_add(n, Ordering::SeqCst) == 0 {
            c.mark();
        }
        self.total.fetch_add(n, Ordering::SeqCst);
        self.enforce(Some(c.id))
    }

    /// Past the budget, drop stalled connections (never the one numbered `spare`), longest
    /// stalled first, until the total is within it or none is stalled. Returns how many
    /// were dropped.
    fn enforce(&self, spare: Option<u64>) -> usize {
        let mut dropped = 0;
        while self.held() > self.budget {
            let now = Instant::now();
            let victim = {
                let conns = self.lock();
                conns
                    .values()
                    .filter(|o| {
                        Some(o.id) != spare
                            && !o.dropped.load(Ordering::SeqCst)
                            && o.pending.load(Ordering::SeqCst) > 0
                    })
                    .map(|o| (o.since(), o))
                    .filter(|(since, _)| now.saturating_duration_since(*since) >= self.stall)
                    .min_by_key(|(since, o)| (*since, o.id))
                    .map(|(_, o)| Arc::clone(o))
            };
            let Some(v) = victim else { break };
            v.dropped.store(true, Ordering::SeqCst);
            let held = v.pending.load(Ordering::SeqCst);
            let total = self.held();
            self.release(&v, usize::MAX);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            dropped += 1;
            eprintln!(
                "agentjail: dropped an HTTP connection whose client took none of its {held} unread response bytes for the longest: the server held {} unread bytes over all connections, more than --unread-budget {}",
                total,
                self.budget
            );
            v.drop.notify_one();
        }
        dropped
    }

    /// Check the budget every [`SWEEP`] until the runtime ends: a response that was not
    /// stalled when it was handed over (none is, then) is dropped once it stalls.
    pub fn sweep(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SWEEP).await;
                me.enforce(None);
            }
        })
    }
}

impl ConnOut {
    fn mark(&self) {
        self.taken.store(0, Ordering::SeqCst);
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// When its socket last made progress.
    fn since(&self) -> Instant {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Its socket took `n` bytes.
    fn took(&self, n: usize) {
        let taken = self.taken.fetch_add(n, Ordering::SeqCst) + n;
        if taken >= PROGRESS_BYTES || self.pending.load(Ordering::SeqCst) == 0 {
            self.mark();
        }
    }
}

/// A connection's socket, counting what it takes of the responses.
pub struct Metered<I> {
    pub io: I,
    pub out: Arc<ConnOut>,
    pub unread: Arc<Unread>,
}

impl<I> Metered<I> {
    fn took(&self, n: usize) {
        if n > 0 {
            self.unread.release(&self.out, n);
            self.out.took(n);
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Metered<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Metered<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.took(n);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            self.took(n);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `c`'s socket last made progress `ago`.
    fn stalled_for(c: &ConnOut, ago: Duration) {
        *c.progress.lock().unwrap() = Instant::now() - ago;
    }

    #[test]
    fn past_the_budget_the_longest_stalled_other_connection_goes() {
        let mut u = Unread::new(100);
        u.stall = Duration::ZERO;
        let a = u.open();
        let b = u.open();
        let c = u.open();
        assert_eq!(u.produced(&a, 60), 0);
        assert_eq!(u.produced(&b, 30), 0);
        // c's response pushes the total past 100: a, stalled longest, is dropped.
        assert_eq!(u.produced(&c, 50), 1);
        assert!(a.dropped.load(Ordering::SeqCst));
        assert!(!b.dropped.load(Ordering::SeqCst));
        assert_eq!(u.held(), 80);
        // A response larger than the budget alone is still handed over; the others go first.
        assert_eq!(u.produced(&c, 500), 1);
        assert!(b.dropped.load(Ordering::SeqCst));
        assert_eq!(u.held(), 550);
        u.release(&c, 520);
        assert_eq!(u.held(), 30);
        u.forget(&c);
        u.forget(&a);
        u.forget(&b);
        assert_eq!(u.held(), 0);
    }

    /// The soak's case: a client reading a large answer while a silent one is answered is
    /// never the one dropped, even when it is the only other connection holding bytes; the
    /// silent one goes once it has stalled.
    #[test]
    fn a_reading_client_is_never_dropped_for_another_answer() {
        let u = Unread::new(1000);
        let reader = u.open();
        let silent = u.open();
        assert_eq!(u.produced(&reader, 900), 0);
        // The reader's socket takes a buffer's worth: progress.
        u.release(&reader, 100);
        reader.took(PROGRESS_BYTES);
        assert_eq!(u.produced(&silent, 900), 0, "the reader was dropped");
        assert!(!reader.dropped.load(Ordering::SeqCst));
        assert_eq!(u.held(), 1700, "over the budget while the reader reads");
        // Nothing is stalled yet: a check drops no one.
        assert_eq!(u.enforce(None), 0);
        // The silent one has taken nothing for STALL: it goes, the reader stays.
        stalled_for(&silent, STALL);
        assert_eq!(u.enforce(None), 1);
        assert!(silent.dropped.load(Ordering::SeqCst));
        assert!(!reader.dropped.load(Ordering::SeqCst));
        assert_eq!(u.held(), 800);
    }

    /// A client that takes a byte at a time makes no progress: it stalls like a silent one.
    #[test]
    fn a_trickling_reader_stalls() {
        let u = Unread::new(1000);
        let slow = u.open();
        let other = u.open();
        assert_eq!(u.produced(&slow, 900), 0);
        stalled_for(&slow, STALL);
        for _ in 0..100 {
            u.release(&slow, 1);
            slow.took(1);
        }
        assert_eq!(
            u.produced(&other, 900),
            1,
            "one byte at a time kept it alive"
        );
        assert!(slow.dropped.load(Ordering::SeqCst));
        assert_eq!(u.held(), 900);
    }

    /// A response bigger than the budget is sent to a client that reads it, and dropped
    /// once that client stalls.
    #[test]
    fn a_lone_response_over_the_budget_goes_when_its_client_stalls() {
        let u = Unread::new(100);
        let c = u.open();
        assert_eq!(u.produced(&c, 500), 0);
        assert_eq!(u.enforce(None), 0, "dropped before it could stall");
        stalled_for(&c, STALL);
        assert_eq!(u.enforce(None), 1);
        assert_eq!(u.held(), 0);
    }
}
