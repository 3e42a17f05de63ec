//! Attacks on the seccomp filter. Every filter is installed in a forked child, never in the
//! test process. The parent takes the listener with pidfd_getfd, as the supervisor does, and
//! reports what happened to the child: exit code, killing signal, or the notified syscall.

use agentjail_engine::plan::seccomp::plan as seccomp_plan;
use agentjail_engine::policy::SeccompPolicy;
use agentjail_jail::seccomp::{self, Filter};
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Exited(i32),
    Signaled(i32),
    /// The supervisor side received a notification for this syscall number.
    Notified(i32),
}

fn filter_for(groups: &[&str], errno: &[&str]) -> Filter {
    let mut p = SeccompPolicy::default();
    if !groups.is_empty() {
        p.allow_groups.extend(groups.iter().map(|s| s.to_string()));
    }
    p.errno_syscalls = errno.iter().map(|s| s.to_string()).collect();
    let plan = seccomp_plan(&p).expect("plan");
    seccomp::compile(&plan).expect("compile")
}

fn default_filter() -> Filter {
    filter_for(&[], &[])
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn wait_status(pid: libc::pid_t, flags: i32) -> Option<Outcome> {
    let mut status = 0;
    // SAFETY: waitpid writes the status into a valid local.
    let r = unsafe { libc::waitpid(pid, &mut status, flags) };
    if r == 0 {
        return None;
    }
    assert_eq!(r, pid, "waitpid: errno {}", errno());
    if libc::WIFEXITED(status) {
        Some(Outcome::Exited(libc::WEXITSTATUS(status)))
    } else {
        Some(Outcome::Signaled(libc::WTERMSIG(status)))
    }
}

fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: kill with a pid we forked and have not reaped.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = wait_status(pid, 0);
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fds into a valid array.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0);
    // SAFETY: both fds were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Fork; in the child install `filter` and run `body` (raw syscalls only: no allocation after
/// fork), exiting with its return value. With `take_listener` the parent grabs the listener
/// and watches it; without, the child closes it first (no supervisor).
fn run_filtered(filter: &Filter, take_listener: bool, body: &dyn Fn() -> i32) -> Outcome {
    let (ready_r, ready_w) = pipe();
    let (go_r, go_w) = pipe();
    // SAFETY: fork; the child below only makes raw syscalls and _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: errno {}", errno());
    if pid == 0 {
        let fd = match seccomp::install(filter) {
            Ok(fd) => fd,
            // SAFETY: _exit never returns and runs no destructors.
            Err(e) => unsafe { libc::_exit(200 + e.min(50)) },
        };
        if !take_listener {
            // SAFETY: closing the listener fd we own.
            unsafe { libc::close(fd) };
        }
        let bytes = fd.to_ne_bytes();
        // SAFETY: write from a valid local buffer.
        unsafe { libc::write(ready_w.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
        let mut b = [0u8; 1];
        // SAFETY: read into a valid local buffer.
        unsafe { libc::read(go_r.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
        let code = body();
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(code) };
    }
    drop(ready_w);
    drop(go_r);
    let mut bytes = [0u8; 4];
    // SAFETY: read into a valid local buffer.
    let n = unsafe { libc::read(ready_r.as_raw_fd(), bytes.as_mut_ptr().cast(), 4) };
    if n != 4 {
        return wait_status(pid, 0).expect("child status");
    }
    let child_fd = i32::from_ne_bytes(bytes);
    let listener = if take_listener {
        // SAFETY: pidfd_open on our own child.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        assert!(pidfd >= 0, "pidfd_open: errno {}", errno());
        // SAFETY: the fd was just created.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
        // SAFETY: pidfd_getfd duplicates the child's listener into this process.
        let l = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), child_fd, 0) };
        assert!(l >= 0, "pidfd_getfd: errno {}", errno());
        // SAFETY: the fd was just created.
        Some(unsafe { OwnedFd::from_raw_fd(l as i32) })
    } else {
        None
    };
    // SAFETY: write one byte from a valid buffer.
    unsafe { libc::write(go_w.as_raw_fd(), b"g".as_ptr().cast(), 1) };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(l) = &listener {
            let mut pfd = libc::pollfd {
                fd: l.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, 20) };
            if r > 0 && pfd.revents & libc::POLLIN != 0 {
                // SAFETY: the listener is open for the duration of this borrow.
                let b = unsafe { BorrowedFd::borrow_raw(l.as_raw_fd()) };
                let n = seccomp::receive_notification(b).expect("receive");
                assert_eq!(n.pid as i32, pid);
                kill_and_reap(pid);
                return Outcome::Notified(n.nr);
            }
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(o) = wait_status(pid, libc::WNOHANG) {
            return o;
        }
        if Instant::now() > deadline {
            kill_and_reap(pid);
            panic!("child {pid} hung");
        }
    }
}

fn raw(nr: i64, a: [u64; 6]) -> i64 {
    // SAFETY: test syscalls with scalar or null arguments; the filter decides their fate.
    unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) }
}

#[test]
fn allowed_syscalls_work() {
    let f = default_filter();
    let o = run_filtered(&f, true, &|| {
        let path = c"/dev/null";
        // SAFETY: open a static NUL-terminated path.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return 1;
        }
        // SAFETY: write a static buffer.
        if unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) } != 1 {
            return 2;
        }
        // SAFETY: getpid has no arguments.
        if unsafe { libc::getpid() } <= 0 {
            return 3;
        }
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes a valid local.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
            return 4;
        }
        // TCGETS is allowed (fails with ENOTTY on /dev/null), even with high bits set.
        let r = raw(
            libc::SYS_ioctl,
            [fd as u64, libc::TCGETS | (1 << 32), 0, 0, 0, 0],
        );
        if r != -1 || errno() != libc::ENOTTY {
            return 5;
        }
        0
    });
    assert_eq!(o, Outcome::Exited(0));
}

#[test]
fn forbidden_syscalls_notify_the_supervisor_and_do_not_run() {
    let f = filter_for(&["process_spawn", "sockets_local"], &[]);
    let cases: &[(i64, [u64; 6])] = &[
        (
            libc::SYS_unshare,
            [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0],
        ),
        (libc::SYS_setns, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_mount, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_umount2, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_pivot_root, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_chroot, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_bpf, [0, 0, 0, 0, 0, 0]),
        (
            libc::SYS_ptrace,
            [libc::PTRACE_TRACEME as u64, 0, 0, 0, 0, 0],
        ),
        (libc::SYS_io_uring_setup, [1, 0, 0, 0, 0, 0]),
        (libc::SYS_keyctl, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_add_key, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_userfaultfd, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_perf_event_open, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_personality, [0xffff_ffff, 0, 0, 0, 0, 0]),
        (libc::SYS_seccomp, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_process_vm_readv, [1, 0, 0, 0, 0, 0]),
        (libc::SYS_setuid, [0, 0, 0, 0, 0, 0]),
        (
            libc::SYS_socket,
            [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0],
        ),
        (
            libc::SYS_socket,
            [libc::AF_NETLINK as u64, libc::SOCK_RAW as u64, 0, 0, 0, 0],
        ),
        (libc::SYS_prlimit64, [1, 0, 0, 0, 0, 0]),
        (libc::SYS_fsopen, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_open_tree, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_kexec_load, [0, 0, 0, 0, 0, 0]),
        (libc::SYS_init_module, [0, 0, 0, 0, 0, 0]),
    ];
    for (nr, args) in cases {
        let o = run_filtered(&f, true, &|| {
            raw(*nr, *args);
            99 // reached only if the syscall returned: a breach
        });
        assert_eq!(
            o,
            Outcome::Notified(*nr as i32),
            "{}",
            seccomp::syscall_name(*nr).unwrap_or("?")
        );
    }
}

#[test]
fn without_a_listener_forbidden_syscalls_fail_with_enosys() {
    let f = default_filter();
    let o = run_filtered(&f, false, &|| {
        let r = raw(
            libc::SYS_unshare,
            [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0],
        );
        if r == -1 && errno() == libc::ENOSYS {
            0
        } else {
            1
        }
    });
    assert_eq!(o, Outcome::Exited(0));
}

#[test]
fn terminal_injection_is_impossible_however_encoded() {
    // A request outside the allowlist never runs: it fails with ENOTTY (what a
    // non-terminal answers), whatever is in the upper 32 bits the kernel ignores.
    let f = default_filter();
    for base in [libc::TIOCSTI, libc::TIOCLINUX, libc::TCSETS] {
        for high in [0u64, 1 << 32, 0xffff_ffff_0000_0000, 0x8000_0000_0000_0000] {
            let req = base | high;
            let o = run_filtered(&f, true, &|| {
                let c = b"x";
                let r = raw(libc::SYS_ioctl, [0, req, c.as_ptr() as u64, 0, 0, 0]);
                if r == -1 && errno() == libc::ENOTTY {
                    0
                } else {
                    1
                }
            });
            assert_eq!(o, Outcome::Exited(0), "request {req:#x}");
        }
    }
}

/// The session doorbell (ioctl request SESSION_DOORBELL) reaches the supervisor under every
/// policy: ioctl allowed, ioctl refused with an errno, ioctl not named at all; whatever the
/// upper 32 bits. Any other unknown request still gets ENOTTY.
#[test]
fn the_session_doorbell_always_reaches_the_supervisor() {
    let door = u64::from(seccomp::SESSION_DOORBELL);
    for f in [
        default_filter(),
        filter_for(&["basic_io"], &["ioctl"]),
        filter_for(&["memory"], &[]),
    ] {
        for req in [door, door | (1 << 32)] {
            let o = run_filtered(&f, true, &|| {
                raw(libc::SYS_ioctl, [3, req, 0, 0, 0, 0]);
                1
            });
            assert_eq!(o, Outcome::Notified(libc::SYS_ioctl as i32), "{req:#x}");
        }
    }
    let o = run_filtered(&default_filter(), true, &|| {
        let r = raw(libc::SYS_ioctl, [3, door + 1, 0, 0, 0, 0]);
        if r == -1 && errno() == libc::ENOTTY {
            0
        } else {
            1
        }
    });
    assert_eq!(o, Outcome::Exited(0));
}

#[test]
fn i386_int80_syscalls_are_killed() {
    let f = default_filter();
    let o = run_filtered(&f, true, &|| {
        let mut eax: u32 = 20; // getpid in the i386 table
                               // SAFETY: int 0x80 with a no-argument i386 syscall number; only eax is clobbered.
        unsafe { std::arch::asm!("int 0x80", inout("eax") eax, options(nostack)) };
        if eax > 0 {
            99
        } else {
            98
        }
    });
    assert_eq!(o, Outcome::Signaled(libc::SIGSYS));
}

#[test]
fn x32_syscall_numbers_are_killed() {
    let f = default_filter();
    let o = run_filtered(&f, true, &|| {
        raw(0x4000_0000 | libc::SYS_getpid, [0; 6]);
        99
    });
    assert_eq!(o, Outcome::Signaled(libc::SIGSYS));
}

#[test]
fn clone_with_namespace_flags_is_refused_even_with_process_spawn() {
    let f = filter_for(&["process_spawn"], &[]);
    for flag in [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWCGROUP,
    ] {
        let o = run_filtered(&f, true, &|| {
            raw(
                libc::SYS_clone,
                [(flag | libc::SIGCHLD) as u64, 0, 0, 0, 0, 0],
            );
            99
        });
        assert_eq!(
            o,
            Outcome::Notified(libc::SYS_clone as i32),
            "flag {flag:#x}"
        );
    }
    // A plain fork-like clone works under process_spawn.
    let o = run_filtered(&f, true, &|| {
        let r = raw(libc::SYS_clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]);
        if r == 0 {
            // SAFETY: _exit in the grandchild.
            unsafe { libc::_exit(7) };
        }
        let mut st = 0;
        // SAFETY: wait4 writes a valid local.
        let w = unsafe { libc::wait4(r as i32, &mut st, 0, std::ptr::null_mut()) };
        if w == r as i32 && libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 7 {
            0
        } else {
            1
        }
    });
    assert_eq!(o, Outcome::Exited(0));
}

#[test]
fn fork_is_refused_without_process_spawn_and_clone3_gets_enosys() {
    let f = default_filter();
    let o = run_filtered(&f, true, &|| {
        raw(libc::SYS_clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]);
        99
    });
    assert_eq!(o, Outcome::Notified(libc::SYS_clone as i32));
    let o = run_filtered(&f, true, &|| {
        let r = raw(libc::SYS_clone3, [0, 0, 0, 0, 0, 0]);
        if r == -1 && errno() == libc::ENOSYS {
            0
        } else {
            1
        }
    });
    assert_eq!(o, Outcome::Exited(0));
}

#[test]
fn policy_errno_syscalls_return_eperm() {
    let f = filter_for(&[], &["mount", "sched_setaffinity"]);
    let o = run_filtered(&f, true, &|| {
        let r = raw(libc::SYS_mount, [0; 6]);
        if r == -1 && errno() == libc::EPERM {
            0
        } else {
            1
        }
    });
    assert_eq!(o, Outcome::Exited(0));
}

fn python(f: &Filter, code: &str) -> Outcome {
    let prog = CString::new("/usr/bin/python3").unwrap();
    let args: Vec<CString> = [
        "/usr/bin/python3",
        "-I",
        "-S",
        "-B",
        "-X",
        "utf8",
        "-c",
        code,
    ]
    .iter()
    .map(|s| CString::new(*s).unwrap())
    .collect();
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let env = [
        c"PATH=/usr/bin:/bin".as_ptr(),
        c"LANG=C.UTF-8".as_ptr(),
        std::ptr::null(),
    ];
    run_filtered(f, true, &|| {
        // SAFETY: argv and envp are NUL-terminated arrays of C strings built before fork.
        unsafe { libc::execve(prog.as_ptr(), argv.as_ptr(), env.as_ptr()) };
        127
    })
}

#[test]
fn python_runs_under_the_default_groups_without_notification() {
    let f = default_filter();
    assert_eq!(
        python(&f, "import json,statistics; print(1)"),
        Outcome::Exited(0)
    );
    let incident = r#"
import json, statistics, math
rows = [{"status": "paid" if i % 7 else "failed", "latency_ms": 150 + i} for i in range(60)]
lat = sorted(float(r["latency_ms"]) for r in rows)
print(json.dumps({"avg": statistics.fmean(lat), "p95": lat[int(round((len(lat) - 1) * 0.95))],
                  "sd": statistics.pstdev(lat), "sq": math.sqrt(2)}, separators=(",", ":")))
"#;
    assert_eq!(python(&f, incident), Outcome::Exited(0));
    // Threads: clone3 gets ENOSYS, glibc falls back to clone with CLONE_THREAD.
    let threads =
        "import threading\nt = threading.Thread(target=print, args=(2,)); t.start(); t.join()";
    assert_eq!(python(&f, threads), Outcome::Exited(0));
    // An uncaught exception is an ordinary exit, not a forbidden syscall.
    assert_eq!(python(&f, "raise ValueError('x')"), Outcome::Exited(1));
}

#[test]
fn python_subprocess_is_stopped() {
    let f = default_filter();
    let o = python(&f, "import os\nos.fork()");
    assert_eq!(o, Outcome::Notified(libc::SYS_clone as i32));
}

/// A host-directory workspace's filter (`deny_setid_modes`): every call that takes a mode
/// fails with EPERM when it carries S_ISUID or S_ISGID, and works without; the files on disk
/// never get the bit. (The high bits of the mode word cannot smuggle one past: the kernel
/// reads the mode as a umode_t, and the filter compares its low bits.)
#[test]
fn set_id_modes_are_refused_by_a_host_directory_filter() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let dir = std::fs::File::open(d.path()).unwrap();
    let mut p = SeccompPolicy::default();
    p.errno_syscalls.clear();
    let mut plan = seccomp_plan(&p).expect("plan");
    plan.deny_setid_modes = true;
    let f = seccomp::compile(&plan).expect("compile");
    let path = CString::new(file.to_str().unwrap()).unwrap();
    let created = CString::new(d.path().join("c").to_str().unwrap()).unwrap();
    let name = c"f";
    let dirfd = dir.as_raw_fd() as u64;
    let o = run_filtered(&f, true, &|| {
        let p = path.as_ptr() as u64;
        let c = created.as_ptr() as u64;
        let n = name.as_ptr() as u64;
        let creat_flags = (libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC) as u64;
        let refused: &[(i64, [u64; 6])] = &[
            (libc::SYS_chmod, [p, 0o4755, 0, 0, 0, 0]),
            (libc::SYS_chmod, [p, 0o2755, 0, 0, 0, 0]),
            (libc::SYS_chmod, [p, 0o4755 | (1 << 40), 0, 0, 0, 0]),
            (libc::SYS_fchmodat, [dirfd, n, 0o6755, 0, 0, 0]),
            (452, [dirfd, n, 0o4755, 0, 0, 0]), // fchmodat2
            (libc::SYS_creat, [c, 0o4755, 0, 0, 0, 0]),
            (libc::SYS_open, [c, creat_flags, 0o2755, 0, 0, 0]),
            (libc::SYS_openat, [dirfd, c, creat_flags, 0o4755, 0, 0]),
        ];
        for (i, (nr, a)) in refused.iter().enumerate() {
            if raw(*nr, *a) != -1 || errno() != libc::EPERM {
                return 10 + i as i32;
            }
        }
        if raw(libc::SYS_chmod, [p, 0o755, 0, 0, 0, 0]) != 0 {
            return 2;
        }
        if raw(libc::SYS_openat, [dirfd, c, creat_flags, 0o644, 0, 0]) < 0 {
            return 3;
        }
        0
    });
    assert_eq!(o, Outcome::Exited(0));
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777,
        0o755
    );
    let made = std::fs::metadata(d.path().join("c")).unwrap();
    assert_eq!(made.permissions().mode() & 0o6000, 0);
    // The same filter without the rule lets the bit through: the test can see it.
    plan.deny_setid_modes = false;
    let plain = seccomp::compile(&plan).expect("compile");
    let o = run_filtered(&plain, true, &|| {
        if raw(libc::SYS_chmod, [path.as_ptr() as u64, 0o4755, 0, 0, 0, 0]) == 0 {
            0
        } else {
            1
        }
    });
    assert_eq!(o, Outcome::Exited(0));
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777,
        0o4755
    );
}
