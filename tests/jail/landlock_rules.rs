//! Attacks on the landlock rules, each from a forked child that applied them; the test
//! process itself is never restricted. A payload that succeeds fails the test.

use agentjail_engine::policy::Requirement;
use agentjail_jail::landlock::{self, LandlockPlan, Prepared};
use std::ffi::CString;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn abi_or_skip() -> bool {
    let abi = landlock::host_abi();
    if abi <= 0 {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "landlock unavailable in CI (errno {})",
            -abi
        );
        eprintln!("landlock unavailable here; skipping");
        return false;
    }
    true
}

/// Fork, apply `p` in the child, run `body`, return its exit code (or 128+signal).
fn in_child(p: &Prepared, body: &dyn Fn() -> i32) -> i32 {
    // SAFETY: fork; the child makes raw syscalls only and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = match landlock::apply(p) {
            Ok(()) => body(),
            Err((_, e)) => 200 + e.min(50),
        };
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(code) };
    }
    let mut st = 0;
    // SAFETY: waitpid writes a valid local.
    let r = unsafe { libc::waitpid(pid, &mut st, 0) };
    assert_eq!(r, pid);
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else {
        128 + libc::WTERMSIG(st)
    }
}

struct Layout {
    _dir: tempfile::TempDir,
    ro_file: CString,
    ro_new: CString,
    rw_new: CString,
    outside_new: CString,
    plan: LandlockPlan,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    for d in ["ro", "rw", "outside"] {
        std::fs::create_dir(base.join(d)).unwrap();
    }
    std::fs::write(base.join("ro/file"), b"hello").unwrap();
    let c = |p: &str| CString::new(base.join(p).to_str().unwrap()).unwrap();
    let plan = LandlockPlan {
        requirement: Requirement::Required,
        min_abi: 1,
        read_exec: vec![
            base.join("ro").to_str().unwrap().to_string(),
            "/nonexistent/skipped".into(),
        ],
        read_write: vec![base.join("rw").to_str().unwrap().to_string()],
        devices: vec!["/dev/null".into()],
        deny_tcp: true,
        connect_tcp_ports: vec![],
        scope_abstract_unix: true,
        scope_signals: true,
    };
    Layout {
        ro_file: c("ro/file"),
        ro_new: c("ro/new"),
        rw_new: c("rw/new"),
        outside_new: c("outside/new"),
        _dir: dir,
        plan,
    }
}

fn open_errno(path: &CString, flags: i32) -> i32 {
    // SAFETY: open a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    if fd >= 0 {
        // SAFETY: close the fd just opened.
        unsafe { libc::close(fd) };
        0
    } else {
        errno()
    }
}

#[test]
fn ci_machine_has_the_landlock_abi_we_rely_on() {
    let abi = landlock::host_abi();
    if std::env::var("CI").as_deref() == Ok("true") {
        assert!(
            abi >= 6,
            "CI hosts must have landlock ABI >= 6 (TCP rules and scopes), found {abi}"
        );
    }
    eprintln!("landlock ABI {abi}");
}

#[test]
fn filesystem_reads_allowed_writes_only_in_read_write() {
    if !abi_or_skip() {
        return;
    }
    let l = layout();
    let p = landlock::prepare(&l.plan).unwrap();
    let null = c"/dev/null";
    let code = in_child(&p, &|| {
        if open_errno(&l.ro_file, libc::O_RDONLY) != 0 {
            return 1;
        }
        if open_errno(&l.ro_file, libc::O_WRONLY) != libc::EACCES {
            return 2;
        }
        if open_errno(&l.ro_new, libc::O_WRONLY | libc::O_CREAT) != libc::EACCES {
            return 3;
        }
        if open_errno(&l.outside_new, libc::O_WRONLY | libc::O_CREAT) != libc::EACCES {
            return 4;
        }
        if open_errno(&l.rw_new, libc::O_WRONLY | libc::O_CREAT) != 0 {
            return 5;
        }
        // SAFETY: open a static NUL-terminated path.
        let fd = unsafe { libc::open(null.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return 6;
        }
        // A fifo outside read_write: MAKE_FIFO is handled and not granted.
        // SAFETY: mkfifo with a NUL-terminated path.
        if unsafe { libc::mkfifo(l.outside_new.as_ptr(), 0o600) } == 0 || errno() != libc::EACCES {
            return 7;
        }
        // /etc is not in any rule.
        if open_errno(&CString::from(c"/etc/hostname"), libc::O_RDONLY) != libc::EACCES {
            return 8;
        }
        0
    });
    assert_eq!(code, 0);
}

#[test]
fn tcp_connect_and_bind_are_denied() {
    if !abi_or_skip()
        || !crate::common::require_feature(
            "landlock ABI >= 4 (TCP rules)",
            landlock::host_abi() >= 4,
        )
    {
        return;
    }
    let l = layout();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let p = landlock::prepare(&l.plan).unwrap();
    let code = in_child(&p, &|| {
        // SAFETY: socket with scalar arguments.
        let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if s < 0 {
            return 1;
        }
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as u16,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as u32;
        // SAFETY: connect with a valid sockaddr_in of `len` bytes.
        let r = unsafe { libc::connect(s, (&addr as *const libc::sockaddr_in).cast(), len) };
        if r == 0 || errno() != libc::EACCES {
            return 2;
        }
        let any = libc::sockaddr_in {
            sin_port: 0u16.to_be(),
            ..addr
        };
        // SAFETY: bind with a valid sockaddr_in of `len` bytes.
        let r = unsafe { libc::bind(s, (&any as *const libc::sockaddr_in).cast(), len) };
        if r == 0 || errno() != libc::EACCES {
            return 3;
        }
        0
    });
    assert_eq!(code, 0);
    drop(listener);
}

#[test]
fn abstract_unix_sockets_and_signals_outside_the_domain_are_denied() {
    if !abi_or_skip()
        || !crate::common::require_feature("landlock ABI >= 6 (scopes)", landlock::host_abi() >= 6)
    {
        return;
    }
    let l = layout();
    let name = format!("agentjail-landlock-test-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    let mut sun = libc::sockaddr_un {
        sun_family: libc::AF_UNIX as u16,
        sun_path: [0; 108],
    };
    for (i, b) in name.bytes().enumerate() {
        sun.sun_path[i + 1] = b as libc::c_char;
    }
    let sun_len = (std::mem::size_of::<libc::sa_family_t>() + 1 + name.len()) as u32;
    // SAFETY: getpid has no arguments.
    let parent = unsafe { libc::getpid() };
    let p = landlock::prepare(&l.plan).unwrap();
    let code = in_child(&p, &|| {
        // SAFETY: socket with scalar arguments.
        let s = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if s < 0 {
            return 1;
        }
        // SAFETY: connect with a valid sockaddr_un of `sun_len` bytes.
        let r = unsafe { libc::connect(s, (&sun as *const libc::sockaddr_un).cast(), sun_len) };
        if r == 0 || errno() != libc::EPERM {
            return 2;
        }
        // SAFETY: signal 0 to the test process: a permission probe, delivers nothing.
        let r = unsafe { libc::kill(parent, 0) };
        if r == 0 || errno() != libc::EPERM {
            return 3;
        }
        0
    });
    assert_eq!(code, 0);
    // The same probes succeed without landlock: the denial above is landlock's.
    let probe = std::os::unix::net::UnixStream::connect_addr(&addr);
    assert!(probe.is_ok());
    drop(listener);
}

#[test]
fn enforcement_reports_abi_and_features() {
    if !abi_or_skip() {
        return;
    }
    let l = layout();
    let p = landlock::prepare(&l.plan).unwrap();
    let c = landlock::enforcement(&l.plan, Some(&p));
    assert!(
        c.detail
            .contains(&format!("landlock ABI {}", landlock::host_abi())),
        "{}",
        c.detail
    );
    if landlock::host_abi() >= 6 {
        assert_eq!(
            c.state,
            agentjail_jail::ControlState::Enforced,
            "{}",
            c.detail
        );
        assert!(c.detail.contains("TCP bind/connect denied"));
        assert!(c.detail.contains("scopes: abstract unix + signal"));
    }
    let mut required_too_new = l.plan.clone();
    required_too_new.min_abi = 99;
    assert!(landlock::prepare(&required_too_new).is_err());
    let mut best_effort = required_too_new.clone();
    best_effort.requirement = Requirement::BestEffort;
    let p = landlock::prepare(&best_effort).unwrap();
    assert_eq!(
        landlock::enforcement(&best_effort, Some(&p)).state,
        agentjail_jail::ControlState::Degraded
    );
}
