//! Moving bytes once a request is allowed: a tunnel's two directions (TLS records only,
//! nothing of the program's upstream before the upstream answered as a TLS server), a
//! plain-HTTP request's body up and response back, each counted against the run's byte
//! limits and cut at the first that passes. Separate from the judging of requests
//! (`requests.rs`): nothing here decides where a connection goes, only how much crosses it
//! and in what form.

use super::{log, Entry, Shared};
use crate::wire;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Instant;

/// How a transfer ended: `ok`, or what cut it.
fn end_reason(r: Result<(), &'static str>) -> &'static str {
    r.err().unwrap_or("ok")
}

/// Read some of `from` into `buf`: Ok(0) at its end.
fn read_some(from: &mut impl Read, buf: &mut [u8]) -> Result<usize, &'static str> {
    match from.read(buf) {
        Ok(n) => Ok(n),
        // A TLS upstream that closed without close_notify: the end of its response (the
        // program's HTTP client checks the framing; one request per connection).
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Err("idle_timeout")
        }
        Err(_) => Err("connection_reset"),
    }
}

/// Copy `from` → `to`, counting into `mine` and the run's `total` under `limit`. Ok at EOF.
fn pump(
    from: &mut impl Read,
    to: &mut impl Write,
    mine: &AtomicU64,
    total: &AtomicU64,
    limit: u64,
    over: &'static str,
) -> Result<(), &'static str> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = read_some(from, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        forward(&buf[..n], to, mine, total, limit, over)?;
    }
}

/// Write `bytes` to `to`, counted into `mine` and `total` unless that would pass `limit`.
fn forward(
    bytes: &[u8],
    to: &mut impl Write,
    mine: &AtomicU64,
    total: &AtomicU64,
    limit: u64,
    over: &'static str,
) -> Result<(), &'static str> {
    let n = bytes.len() as u64;
    if !add_within(total, n, limit) {
        return Err(over);
    }
    if to.write_all(bytes).is_err() {
        total.fetch_sub(n, SeqCst);
        return Err("connection_reset");
    }
    mine.fetch_add(n, SeqCst);
    Ok(())
}

/// [`pump`] for one direction of a tunnel: only whole, well-formed TLS records pass
/// ([`wire::record_header`]). Each record's 5-byte header is checked (and `on_record` asked
/// with its content type) before any byte of it is forwarded; its body follows in bulk as
/// it arrives, unread. The first byte that does not start a valid header ends the
/// direction with `not_tls`, nothing of it forwarded; so does a stream that ends inside a
/// header. A stream may end inside a body (the peer's TLS sees the record cut short).
/// `forwarded` is called after each write of whole headers (and what follows them) to `to`.
#[allow(clippy::too_many_arguments)]
fn pump_records(
    from: &mut impl Read,
    to: &mut impl Write,
    mine: &AtomicU64,
    total: &AtomicU64,
    limit: u64,
    over: &'static str,
    not_tls: &'static str,
    on_record: &mut dyn FnMut(u8) -> Result<(), &'static str>,
    forwarded: &mut dyn FnMut(),
) -> Result<(), &'static str> {
    let mut buf = vec![0u8; 16 * 1024];
    // buf[..held]: the start of a header that is not complete yet (at most 4 bytes).
    let mut held = 0;
    // Body bytes of the current record still to come.
    let mut left = 0usize;
    loop {
        let n = read_some(from, &mut buf[held..])?;
        if n == 0 {
            return if held == 0 { Ok(()) } else { Err(not_tls) };
        }
        let end = held + n;
        let mut pos = 0;
        let mut refused = None;
        while pos < end {
            if left > 0 {
                let k = left.min(end - pos);
                pos += k;
                left -= k;
                continue;
            }
            if end - pos < wire::RECORD_HEADER {
                break;
            }
            match wire::record_header(&buf[pos..end]) {
                Some((kind, len)) => {
                    if let Err(why) = on_record(kind) {
                        refused = Some(why);
                        break;
                    }
                    left = len;
                    pos += wire::RECORD_HEADER;
                }
                None => {
                    refused = Some(not_tls);
                    break;
                }
            }
        }
        if pos > 0 {
            forward(&buf[..pos], to, mine, total, limit, over)?;
            forwarded();
        }
        if let Some(why) = refused {
            return Err(why);
        }
        buf.copy_within(pos..end, 0);
        held = end - pos;
    }
}

/// Add `n` to `total` unless that would pass `limit`.
fn add_within(total: &AtomicU64, n: u64, limit: u64) -> bool {
    total
        .fetch_update(SeqCst, SeqCst, |t| t.checked_add(n).filter(|s| *s <= limit))
        .is_ok()
}

fn send_counted(
    sh: &Shared,
    to: &mut impl Write,
    bytes: &[u8],
    mine: &AtomicU64,
) -> Result<(), &'static str> {
    if !add_within(&sh.bytes_out, bytes.len() as u64, sh.rules.limits.bytes_out) {
        return Err("bytes_out_limit");
    }
    to.write_all(bytes).map_err(|_| "connection_reset")?;
    mine.fetch_add(bytes.len() as u64, SeqCst);
    Ok(())
}

/// Whether the upstream answered the ClientHello as a TLS server does: set once by the
/// upstream's direction of a tunnel, waited for by the program's.
#[derive(Default)]
struct Answered {
    state: Mutex<Option<bool>>,
    cv: std::sync::Condvar,
}

impl Answered {
    /// The first call decides; later ones change nothing.
    fn set(&self, v: bool) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            *g = Some(v);
            self.cv.notify_all();
        }
    }

    fn wait(&self) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *g {
                Some(v) => return v,
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

/// A tunnel: the ClientHello `hello` upstream, then both ways, TLS records only
/// ([`pump_records`]). Nothing more of the program's (`leftover`, read with the hello,
/// included) goes upstream before the upstream's first record, a handshake record (its
/// ServerHello), came back: a service that does not speak TLS gets the one ClientHello
/// record and nothing after it. Its answer, not a TLS record, ends the tunnel
/// (`upstream_not_tls`); a TLS alert is passed to the program and nothing more goes up.
pub(super) fn relay(
    sh: &Shared,
    client: TcpStream,
    up: TcpStream,
    hello: Vec<u8>,
    leftover: Vec<u8>,
    e: Entry,
    t0: Instant,
) {
    let lim = &sh.rules.limits;
    let _ = client.set_read_timeout(Some(lim.idle));
    let _ = up.set_read_timeout(Some(lim.idle));
    let (bin, bout) = (AtomicU64::new(0), AtomicU64::new(0));
    let answered = Answered::default();
    // The first direction to fail names the end: its failure cuts both sockets, and what
    // the other then sees (a reset) is only its consequence.
    let first_end = std::sync::OnceLock::new();
    let sent = send_counted(sh, &mut &up, &hello, &bout);
    if let Err(why) = sent {
        let _ = first_end.set(why);
    } else {
        std::thread::scope(|s| {
            let (c2, u2, answered, bout, first_end) = (&client, &up, &answered, &bout, &first_end);
            let outward = s.spawn(move || {
                let r = if answered.wait() {
                    program_to_upstream(sh, c2, u2, &leftover, bout)
                } else {
                    Ok(())
                };
                if let Err(why) = r {
                    let _ = first_end.set(why);
                }
                finish_direction(r, c2, u2);
            });
            let in_end = upstream_to_program(sh, &up, &client, &bin, answered);
            // However the upstream's side ended, the program's stops waiting for it.
            answered.set(false);
            if let Err(why) = in_end {
                let _ = first_end.set(why);
            }
            finish_direction(in_end, &up, &client);
            if outward.join().is_err() {
                let _ = first_end.set("relay_panicked");
            }
        });
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = up.shutdown(Shutdown::Both);
    let reason = first_end.get().copied().unwrap_or("ok");
    log(
        sh,
        t0,
        Entry {
            bytes_in: bin.load(SeqCst),
            bytes_out: bout.load(SeqCst),
            allowed: true,
            reason: reason.into(),
            ms: t0.elapsed().as_millis() as u64,
            ..e
        },
    );
}

/// The program's side of a tunnel once the upstream answered: `leftover` (read with the
/// ClientHello), then the socket; TLS records only, anything else is `not_tls`.
fn program_to_upstream(
    sh: &Shared,
    client: &TcpStream,
    up: &TcpStream,
    leftover: &[u8],
    bout: &AtomicU64,
) -> Result<(), &'static str> {
    pump_records(
        &mut leftover.chain(client),
        &mut &*up,
        bout,
        &sh.bytes_out,
        sh.rules.limits.bytes_out,
        "bytes_out_limit",
        "not_tls",
        &mut |_| Ok(()),
        &mut || {},
    )
}

/// The upstream's side of a tunnel: TLS records only (`upstream_not_tls`), the first a
/// handshake record, which lets the program's side go on ([`Answered`]), or an alert,
/// which passes and stops it.
fn upstream_to_program(
    sh: &Shared,
    up: &TcpStream,
    client: &TcpStream,
    bin: &AtomicU64,
    answered: &Answered,
) -> Result<(), &'static str> {
    let mut first = true;
    // The program's side goes on only once the upstream's handshake record is written to
    // the program: set at its header, a refusal of what the program sent next could cut
    // the client's socket before the answer reached it.
    let handshake = std::cell::Cell::new(false);
    pump_records(
        &mut &*up,
        &mut &*client,
        bin,
        &sh.bytes_in,
        sh.rules.limits.bytes_in,
        "bytes_in_limit",
        "upstream_not_tls",
        &mut |kind| {
            if std::mem::take(&mut first) {
                match kind {
                    wire::HANDSHAKE => handshake.set(true),
                    wire::ALERT => answered.set(false),
                    _ => return Err("upstream_not_tls"),
                }
            }
            Ok(())
        },
        &mut || {
            if handshake.get() {
                answered.set(true);
            }
        },
    )
}

/// One direction ended: at EOF pass the half-close on; on anything else cut both sockets.
fn finish_direction(r: Result<(), &'static str>, from: &TcpStream, to: &TcpStream) {
    match r {
        Ok(()) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
}

/// What a plain-HTTP request goes upstream on: the socket, or a TLS stream over it.
pub(super) trait Upstream: Read + Write {
    fn tcp(&self) -> &TcpStream;
}

impl Upstream for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Upstream for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }
}

/// A plain-HTTP request: the rewritten head and body upstream, then the response back.
pub(super) fn relay_request(
    sh: &Shared,
    client: &TcpStream,
    mut body: impl Read,
    mut up: impl Upstream,
    head: Vec<u8>,
    e: Entry,
    t0: Instant,
) {
    let lim = &sh.rules.limits;
    let _ = client.set_read_timeout(Some(lim.idle));
    let _ = up.tcp().set_read_timeout(Some(lim.idle));
    let (bin, bout) = (AtomicU64::new(0), AtomicU64::new(0));
    let sent = send_counted(sh, &mut up, &head, &bout).and_then(|_| {
        pump(
            &mut body,
            &mut up,
            &bout,
            &sh.bytes_out,
            lim.bytes_out,
            "bytes_out_limit",
        )
    });
    let got = match sent {
        Ok(()) => pump(
            &mut up,
            &mut &*client,
            &bin,
            &sh.bytes_in,
            lim.bytes_in,
            "bytes_in_limit",
        ),
        Err(w) => Err(w),
    };
    // Logged before the close the program waits for: its next request is logged after.
    log(
        sh,
        t0,
        Entry {
            bytes_in: bin.load(SeqCst),
            bytes_out: bout.load(SeqCst),
            allowed: true,
            reason: end_reason(got).into(),
            ms: t0.elapsed().as_millis() as u64,
            ..e
        },
    );
    let _ = client.shutdown(Shutdown::Both);
    let _ = up.tcp().shutdown(Shutdown::Both);
}
