//! The server-wide budget for responses produced and not yet taken by their clients
//! (`--unread-budget`).
//!
//! A response is whole in memory once its handler returns (a record, a file), and hyper
//! holds it until the socket takes it. One client that stops reading holds one response;
//! many together could hold any amount, so the bytes held are counted over all connections:
//! a response's body bytes when it is handed to hyper, less what each connection's socket
//! has taken since. Past the budget the connections stalled longest (whose socket took
//! nothing for the longest time) are dropped, their held responses freed, until the total is
//! within the budget again; the connection whose response just pushed it over is never the
//! one dropped (a single response is bounded by the body and record limits). A response
//! larger than the budget is therefore sent only while no other answer is made: the budget
//! is meant to hold many of the largest responses (the default, 256 MiB, holds 8 of 32 MiB).
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
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One connection's share.
pub struct ConnOut {
    id: u64,
    /// Response bytes handed to hyper and not yet taken by the socket.
    pending: AtomicUsize,
    /// When this connection's socket last took bytes (or was given a response to send).
    progress: Mutex<Instant>,
    dropped: AtomicBool,
    /// Told once when the budget drops this connection.
    pub drop: tokio::sync::Notify,
}

pub struct Unread {
    pub budget: usize,
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
    /// connections stalled longest (never `c`). Returns how many were dropped.
    pub fn produced(&self, c: &ConnOut, n: usize) -> usize {
        if c.pending.fetch_add(n, Ordering::SeqCst) == 0 {
            *c.progress.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        }
        self.total.fetch_add(n, Ordering::SeqCst);
        let mut dropped = 0;
        while self.held() > self.budget {
            let victim = {
                let conns = self.lock();
                conns
                    .values()
                    .filter(|o| {
                        o.id != c.id
                            && !o.dropped.load(Ordering::SeqCst)
                            && o.pending.load(Ordering::SeqCst) > 0
                    })
                    .min_by_key(|o| (*o.progress.lock().unwrap_or_else(|e| e.into_inner()), o.id))
                    .cloned()
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
            *self.out.progress.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
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

    #[test]
    fn past_the_budget_the_longest_stalled_other_connection_goes() {
        let u = Unread::new(100);
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
        // A response larger than the budget alone is still sent; the others go first.
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
}
