//! Sockets for the network allowlist (the engine crate's
//! crates/agentjail-engine/src/netproxy.rs): the jail's child
//! brings its own loopback up and listens on it, before it drops its capabilities; the
//! supervisor wakes a blocked accept with shutdown; landlock's TCP port rule.
//!
//! The child's calls make no allocation: fixed structs on the stack.

use super::{check, check_long, SysResult};
use std::os::fd::RawFd;

/// `struct ifreq` as SIOCGIFFLAGS/SIOCSIFFLAGS use it: the name, then the flags at the
/// start of the 24-byte union (40 bytes in all on 64-bit Linux).
#[repr(C)]
struct IfreqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Bring the loopback interface of this process's network namespace up (it is down in a
/// new one). Needs CAP_NET_ADMIN in the namespace's owning user namespace.
pub fn loopback_up() -> SysResult<()> {
    // SAFETY: socket takes plain integers.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    let mut req = IfreqFlags {
        name: [0; libc::IFNAMSIZ],
        flags: 0,
        _pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    // SAFETY: `req` is a valid, initialised ifreq-sized struct the kernel reads and writes.
    let got = check(unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req as *mut IfreqFlags) });
    let set = got.and_then(|_| {
        req.flags |= libc::IFF_UP as libc::c_short;
        // SAFETY: as above; the kernel only reads it.
        check(unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &req as *const IfreqFlags) })
    });
    super::close(fd);
    set.map(drop)
}

/// A close-on-exec TCP socket listening on 127.0.0.1:`port` of this network namespace.
pub fn tcp_listen_loopback(port: u16) -> SysResult<RawFd> {
    // SAFETY: socket takes plain integers.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `addr` is a valid sockaddr_in of `len` bytes, read only.
    let bound = check(unsafe {
        libc::bind(
            fd,
            &addr as *const libc::sockaddr_in as *const libc::sockaddr,
            len,
        )
    });
    // SAFETY: listen takes plain integers.
    let listening = bound.and_then(|_| check(unsafe { libc::listen(fd, 64) }));
    match listening {
        Ok(_) => Ok(fd),
        Err(e) => {
            super::close(fd);
            Err(e)
        }
    }
}

/// listen(2) on a socket already listening: Linux takes the new backlog (capped at the
/// namespace's `net.core.somaxconn`).
pub fn relisten(fd: RawFd, backlog: libc::c_int) -> SysResult<()> {
    // SAFETY: listen takes plain integers.
    check(unsafe { libc::listen(fd, backlog) }).map(drop)
}

/// shutdown(2) both directions: wakes a thread blocked in accept on a listening socket.
pub fn shutdown_both(fd: RawFd) -> SysResult<()> {
    // SAFETY: shutdown takes plain integers.
    check(unsafe { libc::shutdown(fd, libc::SHUT_RDWR) }).map(drop)
}

const LANDLOCK_RULE_NET_PORT: libc::c_int = 2;

/// landlock_add_rule(NET_PORT): allow `access` (bind/connect TCP) on `port`.
pub fn landlock_add_net_rule(ruleset: RawFd, port: u16, access: u64) -> SysResult<()> {
    #[repr(C, packed)]
    struct NetPortAttr {
        allowed_access: u64,
        port: u64,
    }
    let attr = NetPortAttr {
        allowed_access: access,
        port: u64::from(port),
    };
    // SAFETY: `attr` is a valid packed landlock_net_port_attr, read only.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_NET_PORT,
            &attr as *const NetPortAttr,
            0u32,
        )
    };
    check_long(r).map(drop)
}
