//! A byte buffer with a hard cap, filled while streaming.

/// Keeps at most `cap` bytes; counts everything offered; says when the cap was crossed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Capped {
    pub data: Vec<u8>,
    pub cap: u64,
    /// Bytes the program wrote that we read (kept or not).
    pub total: u64,
    pub truncated: bool,
}

impl Capped {
    pub fn new(cap: u64) -> Self {
        Capped {
            data: Vec::new(),
            cap,
            total: 0,
            truncated: false,
        }
    }

    /// How many bytes the next read should ask for: one more than still fits, so crossing
    /// the cap is seen on the very read that crosses it and overshoots by one byte at most.
    pub fn next_read_len(&self, chunk: usize) -> usize {
        let room = self.cap.saturating_sub(self.total) + 1;
        chunk.min(usize::try_from(room).unwrap_or(usize::MAX))
    }

    /// Append; returns true when the cap is now exceeded.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        self.total += bytes.len() as u64;
        let room = self.cap.saturating_sub(self.data.len() as u64) as usize;
        let keep = bytes.len().min(room);
        self.data.extend_from_slice(&bytes[..keep]);
        if self.total > self.cap {
            self.truncated = true;
        }
        self.truncated
    }

    pub fn exceeded(&self) -> bool {
        self.total > self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_cap_and_flags_overflow() {
        let mut c = Capped::new(4);
        assert!(!c.push(b"ab"));
        assert!(!c.push(b"cd"));
        assert!(!c.exceeded());
        assert!(c.push(b"e"));
        assert_eq!(c.data, b"abcd");
        assert_eq!(c.total, 5);
        assert!(c.truncated);
    }

    #[test]
    fn read_len_never_overshoots_by_more_than_one() {
        let mut c = Capped::new(10);
        assert_eq!(c.next_read_len(65536), 11);
        c.push(b"123456789");
        assert_eq!(c.next_read_len(65536), 2);
        c.push(b"0");
        assert_eq!(c.next_read_len(65536), 1);
    }

    #[test]
    fn zero_cap() {
        let mut c = Capped::new(0);
        assert_eq!(c.next_read_len(100), 1);
        assert!(c.push(b"x"));
        assert!(c.data.is_empty());
    }
}
