//! The jail's pipes as the loop sees them: one capped read of an output pipe into its
//! buffer (and the exec mode's sink), and the feeds that write stdin and the runner's job
//! frame into the jail, from fixed bytes or agentjail's own stdin. Separate from the loop
//! so the caps' arithmetic (never read more than one byte past what fits) and the EOF
//! rules of a feed read apart from when the loop decides to read or write.

use super::Capped;
use crate::sys;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

pub(super) const CHUNK: usize = 64 * 1024;

/// One read from an output pipe into its capped buffer (and the sink). Returns (eof,
/// cap_exceeded).
pub(super) fn drain(
    fd: RawFd,
    buf: &mut Capped,
    sink: &mut Option<&mut dyn Write>,
    scratch: &mut [u8],
) -> (bool, bool) {
    let want = buf.next_read_len(scratch.len());
    match sys::read(fd, &mut scratch[..want]) {
        Ok(0) => (true, false),
        Ok(n) => {
            let before = buf.data.len();
            let over = buf.push(&scratch[..n]);
            if let Some(s) = sink.as_mut() {
                let _ = s.write_all(&buf.data[before..]);
                let _ = s.flush();
            }
            (false, over)
        }
        Err(libc::EAGAIN) => (false, false),
        Err(_) => (true, false),
    }
}

/// What a pipe into the jail is fed from: fixed bytes, or agentjail's own stdin copied
/// through (stdin only).
pub(super) struct Feed {
    pub(super) fd: Option<OwnedFd>,
    data: Vec<u8>,
    offset: usize,
    passthrough: Option<RawFd>,
    pending: Vec<u8>,
}

impl Feed {
    pub(super) fn new(fd: Option<OwnedFd>, data: Vec<u8>, passthrough: Option<RawFd>) -> Feed {
        // Nothing to feed: EOF right away.
        let fd = fd.filter(|_| passthrough.is_some() || !data.is_empty());
        Feed {
            fd,
            data,
            offset: 0,
            passthrough,
            pending: Vec::new(),
        }
    }

    pub(super) fn wants_write(&self) -> bool {
        self.fd.is_some() && (self.offset < self.data.len() || !self.pending.is_empty())
    }

    /// The fd to read agentjail's stdin from, when there is room to forward it.
    pub(super) fn passthrough_fd(&self) -> RawFd {
        if self.fd.is_some() && self.pending.is_empty() {
            self.passthrough.unwrap_or(-1)
        } else {
            -1
        }
    }

    pub(super) fn read_passthrough(&mut self, fd: RawFd) {
        let mut b = vec![0u8; CHUNK];
        match sys::read(fd, &mut b) {
            Ok(0) | Err(_) => self.passthrough = None,
            Ok(n) => self.pending.extend_from_slice(&b[..n]),
        }
    }

    pub(super) fn write_some(&mut self) {
        let Some(fd) = self.fd.as_ref() else { return };
        let from_pending = !self.pending.is_empty();
        let chunk: &[u8] = if from_pending {
            &self.pending
        } else {
            &self.data[self.offset..]
        };
        match sys::write(fd.as_raw_fd(), chunk) {
            Ok(n) if from_pending => drop(self.pending.drain(..n)),
            Ok(n) => self.offset += n,
            Err(libc::EAGAIN) => {}
            Err(_) => self.fd = None, // the program closed its stdin
        }
    }

    /// Close the pipe (EOF for the program) once everything is fed.
    pub(super) fn close_when_done(&mut self) {
        if self.fd.is_some()
            && self.pending.is_empty()
            && self.passthrough.is_none()
            && self.offset >= self.data.len()
        {
            self.fd = None;
        }
    }
}
