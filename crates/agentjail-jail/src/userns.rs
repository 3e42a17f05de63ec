//! User namespace id maps, written by the parent.
//!
//! The jail has exactly one uid and one gid inside. When agentjail runs as an unprivileged
//! user, that id maps to the user's own (the only mapping the kernel allows without
//! privilege). When it runs as host root, it maps to an unprivileged host uid (nobody):
//! root in the host is never root in the jail, and no host file owned by root is writable
//! through the jail's uid.

use super::SetupError;
use crate::plan::{ROOT_LAUNCH_HOST_GID, ROOT_LAUNCH_HOST_UID};
use std::io::Write;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdMaps {
    pub uid_map: String,
    pub gid_map: String,
    pub host_uid: u32,
    pub host_gid: u32,
}

pub fn maps(jail_uid: u32, jail_gid: u32, euid: u32, egid: u32) -> IdMaps {
    let (host_uid, host_gid) = if euid == 0 {
        (ROOT_LAUNCH_HOST_UID, ROOT_LAUNCH_HOST_GID)
    } else {
        (euid, egid)
    };
    IdMaps {
        uid_map: format!("{jail_uid} {host_uid} 1\n"),
        gid_map: format!("{jail_gid} {host_gid} 1\n"),
        host_uid,
        host_gid,
    }
}

fn write_proc(pid: i32, file: &str, contents: &str) -> Result<(), SetupError> {
    let path = format!("/proc/{pid}/{file}");
    let res = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(contents.as_bytes()));
    res.map_err(|e| {
        SetupError::new(
            format!("write {path}"),
            e.raw_os_error(),
            "the kernel refused the user namespace id map; see `agentjail doctor`",
        )
    })
}

/// Write setgroups=deny (required before an unprivileged gid_map, and it keeps the jail
/// from dropping supplementary groups to escape a negative group ACL), then the maps.
pub fn write_maps(pid: i32, maps: &IdMaps) -> Result<(), SetupError> {
    write_proc(pid, "setgroups", "deny")?;
    write_proc(pid, "uid_map", &maps.uid_map)?;
    write_proc(pid, "gid_map", &maps.gid_map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_never_maps_to_root() {
        let m = maps(1000, 1000, 0, 0);
        assert_eq!(m.uid_map, "1000 65534 1\n");
        assert_eq!(m.gid_map, "1000 65534 1\n");
        assert_ne!(m.host_uid, 0);
    }

    #[test]
    fn unprivileged_maps_own_id() {
        let m = maps(1000, 1000, 4242, 77);
        assert_eq!(m.uid_map, "1000 4242 1\n");
        assert_eq!(m.gid_map, "1000 77 1\n");
    }
}
