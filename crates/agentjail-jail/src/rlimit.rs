//! Resource limits applied with setrlimit(2) in the child, always: they are the floor under
//! the cgroup limits, and the only memory bound when no memory cgroup can be made.

use crate::plan::{Rlimit, RlimitKind};

pub fn resource(kind: RlimitKind) -> u32 {
    match kind {
        RlimitKind::Core => libc::RLIMIT_CORE,
        RlimitKind::FileSize => libc::RLIMIT_FSIZE,
        RlimitKind::OpenFiles => libc::RLIMIT_NOFILE,
        RlimitKind::AddressSpace => libc::RLIMIT_AS,
        RlimitKind::Cpu => libc::RLIMIT_CPU,
        RlimitKind::Nproc => libc::RLIMIT_NPROC,
        RlimitKind::MemLock => libc::RLIMIT_MEMLOCK,
        RlimitKind::MsgQueue => libc::RLIMIT_MSGQUEUE,
    }
}

/// Prepared (resource, soft, hard) triples.
pub fn prepare(limits: &[Rlimit]) -> Vec<(u32, u64, u64)> {
    limits
        .iter()
        .map(|l| (resource(l.resource), l.soft, l.hard))
        .collect()
}

/// Child: apply all. Returns the failing resource's index and errno.
pub fn apply(prepared: &[(u32, u64, u64)]) -> Result<(), (usize, i32)> {
    for (i, (res, soft, hard)) in prepared.iter().enumerate() {
        super::sys::setrlimit(*res, *soft, *hard).map_err(|e| (i, e))?;
    }
    Ok(())
}
