//! Capabilities: none, in any set.
//!
//! The child holds a full set in its new user namespace (it needs them for mounts). Before
//! exec it drops the bounding set (so nothing can be regained through a file capability),
//! clears the ambient set (so nothing survives execve implicitly) and zeroes effective,
//! permitted and inheritable with capset.

use super::sys;

/// Highest capability number this kernel knows, read in the parent.
pub fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

/// Child: drop everything. `last_cap` comes from the parent.
pub fn drop_all(last_cap: u32) -> Result<(), i32> {
    for cap in 0..=last_cap {
        match sys::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong) {
            Ok(_) | Err(libc::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    sys::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
    )?;
    sys::capset_zero()
}
