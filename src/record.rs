//! The record: one JSON object that says what happened, and the audit log.

use serde::Serialize;
use std::io::Read;

/// 128 random bits from the kernel, as a UUID v4 string.
pub fn run_id() -> String {
    let mut b = [0u8; 16];
    fill_random(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// 8 random hex characters (cgroup names).
pub fn short_random() -> String {
    let mut b = [0u8; 4];
    fill_random(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn fill_random(b: &mut [u8]) {
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        if f.read_exact(b).is_ok() {
            return;
        }
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    for (i, x) in b.iter_mut().enumerate() {
        *x = ((t >> ((i % 16) * 8)) as u8) ^ (std::process::id() as u8);
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct TraceEntry {
    pub phase: String,
    pub ok: bool,
    pub duration_us: u64,
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub detail: serde_json::Value,
}
