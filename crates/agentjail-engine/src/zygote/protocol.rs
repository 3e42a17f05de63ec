//! The messages between the server and its zygote template, on a SOCK_SEQPACKET socket (one
//! message per datagram, descriptors passed with SCM_RIGHTS). Both sides are agentjail's,
//! but the template's side is read as input all the same: every message is read by the
//! strict JSON reader (bounded, duplicate keys refused) and then as one of these enums,
//! whose unknown fields are refused. Which descriptors travel with a jail is an [`FdSet`],
//! sent beside them; their order is [`FdSet`]'s.
//!
//! ```text
//! server → template  Start, [the policy file's bytes]     template → server  Ready | Refused
//! server → template  Spawn (+ cgroup fds)                  child → server     Cloned (+ its pidfd)
//!                                                          template → server  Spawned (+ FdSet's fds)
//!                                                                             | Failed (+ pidfd)
//! ```

use super::MAX_MESSAGE;
use agentjail_jail::prepared::CgroupCover;
use agentjail_jail::spawn::Spawned;
use agentjail_jail::SetupError;
use serde::{Deserialize, Serialize};
use std::os::fd::OwnedFd;

/// What the server sends the template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToTemplate {
    /// First: the policy the server runs. With `text`, the policy file's bytes follow as the
    /// next message (the server read them; the template never opens a path).
    Start {
        policy_path: String,
        policy_sha256: String,
        text: bool,
    },
    /// One jail, spawn `n`, into the cgroup whose directories are `cgroups` (their
    /// descriptors travel with it, in order: each one's join file, v2 `cgroup.procs` or v1
    /// `tasks` (agentjail_jail::cgroup::JobCgroup::attach_handles), then its directory
    /// when `v2_dir`).
    Spawn {
        n: u64,
        memory: bool,
        pids: bool,
        /// A cpu cgroup caps the jail's CPU bandwidth; without one the template pins it.
        #[serde(default)]
        cpu: bool,
        cgroups: Vec<CgroupFds>,
    },
}

/// One cgroup directory of a spawn request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupFds {
    /// A v2 directory's fd travels too (CLONE_INTO_CGROUP); without one the cgroup is a v1
    /// directory, which the jail joins itself by its `tasks` file.
    pub v2_dir: bool,
}

/// What the template (or, `Cloned`, the jail's child) sends the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromTemplate {
    /// The template loaded the policy and prepared its jail plan, whose digest the server
    /// compares with its own.
    Ready { plan_sha256: String },
    /// The template cannot serve this policy (it exits).
    Refused { error: String },
    /// Sent by a cloned child first thing, with a pidfd of itself (jail/child.rs, step 0).
    Cloned { n: u64 },
    /// The jail of the last request: its descriptors travel as `fds` names them.
    Spawned {
        pid: i32,
        program_pid: Option<i32>,
        fds: FdSet,
    },
    /// The jail's setup failed; with `pidfd`, the failed child's pidfd travels (killed by
    /// the template, reaped by the server, whose child it is).
    Failed { error: WireSetupError, pidfd: bool },
}

/// A setup error as it travels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireSetupError {
    pub stage: String,
    pub errno: Option<i32>,
    pub hint: String,
}

impl From<&SetupError> for WireSetupError {
    fn from(e: &SetupError) -> Self {
        WireSetupError {
            stage: e.stage.clone(),
            errno: e.errno,
            hint: e.hint.clone(),
        }
    }
}

impl ToTemplate {
    pub fn cover(&self) -> CgroupCover {
        match self {
            ToTemplate::Spawn {
                memory, pids, cpu, ..
            } => CgroupCover {
                memory: *memory,
                pids: *pids,
                cpu: *cpu,
            },
            ToTemplate::Start { .. } => CgroupCover::default(),
        }
    }
}

/// Which of a spawned jail's optional descriptors travel. The pidfd, stdout, stderr and
/// status pipes always do, first and in that order; then each one named here, in field
/// order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FdSet {
    pub stdin: bool,
    pub listener: bool,
    pub job: bool,
    pub reply: bool,
    pub program_pidfd: bool,
    pub held_dir: bool,
    /// The network allowlist's listening socket (src/netproxy.rs).
    #[serde(default)]
    pub net: bool,
}

impl FdSet {
    /// How many descriptors travel.
    pub fn count(&self) -> usize {
        4 + [
            self.stdin,
            self.listener,
            self.job,
            self.reply,
            self.program_pidfd,
            self.held_dir,
            self.net,
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }

    /// A spawned jail as its reply and the descriptors that go with it, in order.
    pub fn split(s: Spawned) -> (FromTemplate, Vec<OwnedFd>) {
        let fds = FdSet {
            stdin: s.stdin.is_some(),
            listener: s.listener.is_some(),
            job: s.job.is_some(),
            reply: s.reply.is_some(),
            program_pidfd: s.program_pidfd.is_some(),
            held_dir: s.held_dir.is_some(),
            net: s.net.is_some(),
        };
        let mut all = vec![s.pidfd, s.stdout, s.stderr, s.status];
        all.extend(
            [
                s.stdin,
                s.listener,
                s.job,
                s.reply,
                s.program_pidfd,
                s.held_dir,
                s.net,
            ]
            .into_iter()
            .flatten(),
        );
        let reply = FromTemplate::Spawned {
            pid: s.pid,
            program_pid: s.program_pid,
            fds,
        };
        (reply, all)
    }

    /// The jail back from its reply and descriptors; None when they do not match.
    pub fn join(self, pid: i32, program_pid: Option<i32>, fds: Vec<OwnedFd>) -> Option<Spawned> {
        if fds.len() != self.count() {
            return None;
        }
        let mut it = fds.into_iter();
        let (pidfd, stdout, stderr, status) = (it.next()?, it.next()?, it.next()?, it.next()?);
        let mut next = |present: bool| if present { it.next() } else { None };
        Some(Spawned {
            pid,
            pidfd,
            stdout,
            stderr,
            status,
            stdin: next(self.stdin),
            listener: next(self.listener),
            job: next(self.job),
            reply: next(self.reply),
            program_pidfd: next(self.program_pidfd),
            held_dir: next(self.held_dir),
            net: next(self.net),
            program_pid,
            // The zygote's jails take no late files: their plan has none.
            late: None,
        })
    }
}

/// One message as bytes.
pub fn encode<T: Serialize>(m: &T) -> Vec<u8> {
    serde_json::to_vec(m).unwrap_or_default()
}

/// One message read strictly: the strict reader's bounds, then the enum (unknown fields and
/// messages refused).
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let limits = agentjail_json::ReadLimits {
        max_depth: 8,
        max_bytes: MAX_MESSAGE,
        ..agentjail_json::ReadLimits::default()
    };
    let v = agentjail_json::parse_strict(bytes, &limits).map_err(|e| e.to_string())?;
    serde_json::from_value(v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentjail_jail::os;
    use std::os::fd::AsRawFd;

    #[test]
    fn messages_read_back_and_anything_else_is_refused() {
        let m = ToTemplate::Spawn {
            n: 7,
            memory: true,
            pids: false,
            cpu: false,
            cgroups: vec![CgroupFds { v2_dir: true }],
        };
        assert_eq!(decode::<ToTemplate>(&encode(&m)), Ok(m));
        let r = FromTemplate::Failed {
            error: WireSetupError {
                stage: "landlock".into(),
                errno: Some(1),
                hint: "h".into(),
            },
            pidfd: true,
        };
        assert_eq!(decode::<FromTemplate>(&encode(&r)), Ok(r));
        for bad in [
            &br#"{"msg": "cloned", "n": 1, "n": 2}"#[..],
            br#"{"msg": "cloned", "n": 1, "extra": 0}"#,
            br#"{"msg": "exec", "n": 1}"#,
            br#"{"msg": "spawned", "pid": 3, "program_pid": null, "fds": {"stdin": true, "stdout": true}}"#,
            br#"{"msg": "cloned", "n": -1}"#,
        ] {
            assert!(
                decode::<FromTemplate>(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let huge = format!(
            r#"{{"msg": "refused", "error": "{}"}}"#,
            "x".repeat(MAX_MESSAGE)
        );
        assert!(decode::<FromTemplate>(huge.as_bytes()).is_err());
    }

    #[test]
    fn the_fd_set_names_what_travels_in_order() {
        let pipe = || os::fd::pipe().unwrap().0;
        let spawned = || Spawned {
            pid: 10,
            pidfd: pipe(),
            stdout: pipe(),
            stderr: pipe(),
            status: pipe(),
            stdin: None,
            listener: None,
            job: Some(pipe()),
            reply: Some(pipe()),
            program_pidfd: None,
            held_dir: None,
            net: Some(pipe()),
            program_pid: Some(11),
            late: None,
        };
        let s = spawned();
        let (job, reply, net) = (
            s.job.as_ref().unwrap().as_raw_fd(),
            s.reply.as_ref().unwrap().as_raw_fd(),
            s.net.as_ref().unwrap().as_raw_fd(),
        );
        let (m, fds) = FdSet::split(s);
        let FromTemplate::Spawned {
            pid,
            program_pid,
            fds: set,
        } = decode(&encode(&m)).unwrap()
        else {
            panic!("{m:?}")
        };
        assert_eq!(
            (set.job, set.reply, set.stdin, set.net, set.count()),
            (true, true, false, true, 7)
        );
        // In order: the four always there, then job, reply and the allowlist listener.
        let order = (fds[4].as_raw_fd(), fds[5].as_raw_fd(), fds[6].as_raw_fd());
        assert_eq!(order, (job, reply, net));
        let back = set.join(pid, program_pid, fds).unwrap();
        assert_eq!(back.job.as_ref().map(|f| f.as_raw_fd()), Some(job));
        assert_eq!(back.reply.as_ref().map(|f| f.as_raw_fd()), Some(reply));
        assert_eq!(back.net.as_ref().map(|f| f.as_raw_fd()), Some(net));
        assert!(back.stdin.is_none() && back.program_pid == Some(11));
        // A descriptor short (or one too many) is no jail.
        let (_, mut fds) = FdSet::split(spawned());
        fds.pop();
        assert!(set.join(10, None, fds).is_none());
        let (_, mut fds) = FdSet::split(spawned());
        fds.push(pipe());
        assert!(set.join(10, None, fds).is_none());
    }
}
