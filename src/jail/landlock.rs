//! Landlock (HELPER-OWNED: being written).
use crate::policy::Requirement;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockPlan {
    pub requirement: Requirement,
    pub min_abi: u32,
    /// Paths (inside the jail) that may be read and executed.
    pub read_exec: Vec<String>,
    /// Paths (inside the jail) that may be read, written, created in.
    pub read_write: Vec<String>,
    /// Device files that may be read and written (/dev/null, ...).
    pub devices: Vec<String>,
    pub deny_tcp: bool,
    pub scope_abstract_unix: bool,
    pub scope_signals: bool,
}

// ---- temporary stub until the seccomp/landlock branch lands ----
pub struct Prepared;
pub fn host_abi() -> i32 {
    -1
}
pub fn prepare(_plan: &LandlockPlan) -> Result<Prepared, crate::jail::SetupError> {
    Ok(Prepared)
}
pub fn apply(_p: &Prepared) -> Result<(), (usize, i32)> {
    Ok(())
}
pub fn enforcement(_plan: &LandlockPlan, _p: Option<&Prepared>) -> crate::jail::Control {
    crate::jail::Control::new(
        "landlock",
        crate::jail::ControlState::Unavailable,
        "stub",
        "",
    )
}
