//! Test-only fault injection's one switch, read by the parent's stages (crate::spawn), the
//! child's (crate::prepared numbers them) and the mount code (crate::mount): its own leaf so
//! that none of them imports another for it.

/// `AGENTJAIL_FAULT=<stage name>` in builds with the `fault-injection` feature: the named
/// child stage (report::Stage::name) fails with EIO, or a parent stage (`clone3`,
/// `uid_map`, `cgroup_attach`) fails before/after clone. Release builds never read it.
#[cfg(feature = "fault-injection")]
pub fn fault_name() -> Option<String> {
    std::env::var("AGENTJAIL_FAULT").ok()
}

#[cfg(not(feature = "fault-injection"))]
pub fn fault_name() -> Option<String> {
    None
}
