//! Streaming: a job's or a call's stdout and stderr handed to the front end as the
//! supervisor reads them, before the record (`"stream": true` in serve's protocol, HTTP's
//! `?stream=1`, MCP's progress notifications).
//!
//! What a sink gets is exactly what the record will hold, in the order read: the supervisor
//! hands its capped buffers' new bytes to [`Utf8Chunks`] (supervise::Io, supervise::Sinks:
//! never a byte past the cap), which turns them into text at character boundaries. A
//! multibyte character split across two reads is held back until its last byte comes, so no
//! character is ever split across two chunks; bytes that are not UTF-8 become U+FFFD as in
//! the record, so the chunks of one stream concatenated are the record's `stdout` (or
//! `stderr`) exactly (tested below against `String::from_utf8_lossy` of the whole).
//!
//! A sink runs on the supervisor's thread, between its reads: it must never wait on a
//! client (serve queues each chunk in the client's bounded response queue; HTTP in the
//! response body's channel; MCP as a notification the runtime sends).

use agentjail_jail::supervise::Sinks;
use std::io::Write;

/// Which of the program's outputs a chunk is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// Its name on the wire: `"stdout"` or `"stderr"` (serve's `event`).
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Where a streaming request's output goes, chunk by chunk. Called on the supervisor's
/// thread: an implementation must return at once (queue, never wait on a client).
pub trait OutputSink {
    fn chunk(&self, stream: Stream, text: &str);
}

/// One stream's bytes to text chunks at character boundaries (see the module's doc). What
/// is held back at the end (a character the cap or the program cut short) goes out, lossily
/// decoded, when this is dropped.
pub struct Utf8Chunks<'a> {
    sink: &'a dyn OutputSink,
    stream: Stream,
    carry: Vec<u8>,
}

impl<'a> Utf8Chunks<'a> {
    pub fn new(sink: &'a dyn OutputSink, stream: Stream) -> Utf8Chunks<'a> {
        Utf8Chunks {
            sink,
            stream,
            carry: Vec::new(),
        }
    }

    fn emit(&mut self, upto: usize) {
        if upto == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&self.carry[..upto]).into_owned();
        self.carry.drain(..upto);
        self.sink.chunk(self.stream, &text);
    }
}

impl Write for Utf8Chunks<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.carry.extend_from_slice(buf);
        let upto = whole_chars(&self.carry);
        self.emit(upto);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Utf8Chunks<'_> {
    fn drop(&mut self) {
        let all = self.carry.len();
        self.emit(all);
    }
}

/// How many leading bytes of `b` end on a character boundary: all of them, unless the last
/// one to three bytes are the start of a multibyte character still missing its last bytes
/// (then up to that start). Splitting there never changes what a lossy decoding of the
/// whole gives: a lead byte always begins a new character (or a new invalid sequence).
fn whole_chars(b: &[u8]) -> usize {
    let n = b.len();
    // The last byte that is not a continuation byte (10xxxxxx), within a character's reach.
    for back in 1..=n.min(4) {
        let i = n - back;
        let lead = b[i];
        if lead & 0xC0 == 0x80 {
            continue;
        }
        let need = match lead {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => 1,
        };
        return if back < need { i } else { n };
    }
    n
}

/// The two sinks of one request's supervision, when it streams.
pub struct Tap<'a> {
    out: Option<(Utf8Chunks<'a>, Utf8Chunks<'a>)>,
}

impl<'a> Tap<'a> {
    pub fn new(sink: Option<&'a dyn OutputSink>) -> Tap<'a> {
        Tap {
            out: sink.map(|s| {
                (
                    Utf8Chunks::new(s, Stream::Stdout),
                    Utf8Chunks::new(s, Stream::Stderr),
                )
            }),
        }
    }

    /// The supervisor's sinks (none when the request does not stream).
    pub fn sinks(&mut self) -> Sinks<'_> {
        match self.out.as_mut() {
            Some((o, e)) => Sinks {
                stdout: Some(o),
                stderr: Some(e),
            },
            None => Sinks::default(),
        }
    }
}

/// A cache hit streams its stored output whole, one chunk per stream, so that a streaming
/// caller's chunks are the record's output there too.
pub fn replay(sink: Option<&dyn OutputSink>, record: &serde_json::Value) {
    let Some(sink) = sink else { return };
    for s in [Stream::Stdout, Stream::Stderr] {
        let text = record
            .get("execution")
            .and_then(|e| e.get(s.name()))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        if !text.is_empty() {
            sink.chunk(s, text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    struct Collect(RefCell<Vec<(Stream, String)>>);
    impl OutputSink for Collect {
        fn chunk(&self, stream: Stream, text: &str) {
            self.0.borrow_mut().push((stream, text.to_string()));
        }
    }

    /// Every way of cutting these bytes into reads gives chunks whose concatenation is the
    /// lossy decoding of the whole, and no chunk holds half a character.
    #[test]
    fn chunks_concatenate_to_the_lossy_whole_at_every_split() {
        let samples: [&[u8]; 6] = [
            "aé€😀z".as_bytes(),
            b"\xe2\x82",              // cut short (a cap)
            b"\xe2A\xf0\x9f\x98",     // invalid then cut short
            b"\xed\xa0\x80x\x80\x80", // a surrogate, stray continuations
            b"\xc3\xa9\xc3",
            b"\xf0\x9f\x98\x80\xf0\x9f\x98\x81",
        ];
        for s in samples {
            let whole = String::from_utf8_lossy(s).into_owned();
            // Every pair of cut points.
            for i in 0..=s.len() {
                for j in i..=s.len() {
                    let c = Collect(RefCell::new(Vec::new()));
                    {
                        let mut u = Utf8Chunks::new(&c, Stream::Stdout);
                        for part in [&s[..i], &s[i..j], &s[j..]] {
                            u.write_all(part).unwrap();
                        }
                    }
                    let got: String = c.0.borrow().iter().map(|(_, t)| t.as_str()).collect();
                    assert_eq!(got, whole, "{s:?} cut at {i}, {j}");
                    if std::str::from_utf8(s).is_ok() {
                        // Valid text: no chunk ever got a replacement character.
                        assert!(c.0.borrow().iter().all(|(_, t)| !t.contains('\u{FFFD}')));
                    }
                }
            }
        }
    }

    #[test]
    fn a_character_is_held_until_its_last_byte() {
        let c = Collect(RefCell::new(Vec::new()));
        let mut u = Utf8Chunks::new(&c, Stream::Stderr);
        u.write_all(b"ab\xe2\x82").unwrap();
        assert_eq!(*c.0.borrow(), vec![(Stream::Stderr, "ab".to_string())]);
        u.write_all(b"\xac").unwrap();
        assert_eq!(c.0.borrow()[1], (Stream::Stderr, "€".to_string()));
    }
}
