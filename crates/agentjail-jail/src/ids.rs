//! Random identifiers: run ids (UUID v4) and the short suffixes of job cgroup names.

use crate::sys;

/// Random bytes from the kernel. getrandom only fails before the pool is initialised (it
/// blocks instead) or on a signal (retried), so the fallback is for a broken host; it mixes
/// the time and pid so two ids are still unlikely to collide.
fn fill_random(b: &mut [u8]) {
    if sys::getrandom(b).is_ok() {
        return;
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    for (i, x) in b.iter_mut().enumerate() {
        *x = ((t >> ((i % 16) * 8)) as u8) ^ (std::process::id() as u8);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// 128 random bits from the kernel, as a UUID v4 string.
pub fn run_id() -> String {
    let mut b = [0u8; 16];
    fill_random(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `n` random bytes as lowercase hex (cgroup names, session ids).
pub fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    fill_random(&mut b);
    hex(&b)
}
