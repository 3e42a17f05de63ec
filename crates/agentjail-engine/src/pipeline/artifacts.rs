//! How the files a program left in /app/out reach its record, the same for a run, `exec`
//! and a session call: collected under the policy's caps and rules (crate::artifacts),
//! written to the operator's directory when there is one, listed (inline or by where they
//! were saved) in the record's `artifacts` and `artifacts_skipped`.

use crate::artifacts::{ArtifactsDir, Collected};
use crate::pipeline::record::Recorder;
use std::os::fd::OwnedFd;

/// What a record lists when the artifacts directory could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsaved {
    /// Inline, as if there were no directory (`run`: the record still carries them).
    Inline,
    /// Listed without content or place (`exec`: the operator asked for files, not bytes).
    Listed,
}

/// Collect /app/out (`out`) under the policy's caps, the brokered credentials' values
/// replaced in every file's bytes (crate::redact::scrub_artifacts).
pub fn collect(out: &OwnedFd, policy: &crate::policy::Policy) -> Collected {
    let mut c = crate::artifacts::collect(out, &policy.artifacts);
    crate::redact::scrub_artifacts(&mut c, &policy.redaction.secrets);
    c
}

/// Put `c` into the record: written to `dir` when there is one (a failure is the record's
/// `artifacts_error`, and returned), listed with their content when no larger than
/// `inline_max` and not written.
pub fn into_record(
    r: &mut Recorder,
    c: &Collected,
    inline_max: u64,
    dir: Option<&ArtifactsDir>,
    unsaved: Unsaved,
) -> Result<(), crate::artifacts::ArtifactsError> {
    let mut failed = Ok(());
    let written = match dir.map(|d| d.write(c)) {
        None => None,
        Some(Ok(w)) => Some(w),
        Some(Err(e)) => {
            r.sections.artifacts_error = Some(agentjail_json::safe_text(&e.to_string(), 500));
            failed = Err(e);
            match unsaved {
                Unsaved::Inline => None,
                Unsaved::Listed => Some(Vec::new()),
            }
        }
    };
    let (artifacts, skipped) = crate::artifacts::record_fields(c, inline_max, written.as_deref());
    r.sections.artifacts = Some(artifacts);
    r.sections.artifacts_skipped = Some(skipped);
    failed
}
