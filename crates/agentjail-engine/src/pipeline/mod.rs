//! The pipeline: one job from the action's bytes to its sealed record, the same for every
//! front end (`run`, `serve`, `mcp`, http, `doctor`'s probe) and, call by call, for sessions:
//!
//! ```text
//! contract → policy (+hints) → check → environment → cache? → execute → validate → record
//!  stages::contract   stages::check                 source::JailSource   stages::validate
//! ```
//!
//! [`stages`] are the steps, [`source`] where a job's jail comes from, [`record`] the typed
//! record, [`audit`] its one writer, [`artifacts`] the one way files in /app/out reach a
//! record, [`results`] the one way a program's rich results (MIME bundles) reach it,
//! [`session`] a session's calls.

pub mod artifacts;
pub mod audit;
pub mod compile;
pub mod compile_cache;
pub mod record;
pub mod results;
pub mod session;
pub mod source;
pub mod stages;
pub mod stream;

use crate::cache::Cache;
use crate::contract;
use crate::policy::{LoadedPolicy, Policy};
use record::{Phase, Recorder, Sealed, StopReason};
use serde_json::{json, Value};
pub use source::{ColdStart, JailSource};
pub use stages::Stopped;
use stages::{check, contract, execute, validate};

/// Largest action file read (the contract then applies the policy's tighter caps).
pub const MAX_ACTION_BYTES: u64 = 16 * 1024 * 1024;

/// An action that could not be read: which (`-`: stdin) and the I/O error.
#[derive(Debug)]
pub struct Unreadable {
    pub spec: String,
    pub error: std::io::Error,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read the action {}: {}", self.spec, self.error)
    }
}

impl std::error::Error for Unreadable {}

pub fn read_action(spec: &str) -> Result<Vec<u8>, Unreadable> {
    use std::io::Read;
    let mut buf = Vec::new();
    let res = if spec == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_ACTION_BYTES + 1)
            .read_to_end(&mut buf)
    } else {
        std::fs::File::open(spec).and_then(|f| f.take(MAX_ACTION_BYTES + 1).read_to_end(&mut buf))
    };
    res.map_err(|error| Unreadable {
        spec: spec.to_string(),
        error,
    })?;
    Ok(buf)
}

/// One job through every stage, from the action's bytes to its record: contract, check, the
/// environment, the cache (a hit ends here), the jail from `source`, validation; a
/// cacheable outcome is stored. `r` may already hold front-end fields (the caller).
pub fn job(
    mut r: Recorder,
    raw: &[u8],
    policy: &LoadedPolicy,
    source: &dyn JailSource,
    cache: Option<&Cache>,
) -> Sealed {
    r.sections.policy = Some(record::PolicyRef::of(policy));
    // Host inputs are not in the action, so no key could cover them; and a stored record
    // cannot write artifacts into a directory: such jobs never use the cache.
    // A job with network access depends on what the network answered: never cached either.
    let cache = cache.filter(|_| {
        source.inputs().is_empty()
            && source.artifacts_dir().is_none()
            && !policy.policy.network.allowlist()
    });
    let mut key: Option<String> = None;
    let ended = (|| -> Result<Option<crate::cache::Hit>, Stopped> {
        let (action, effective) = contract(&mut r, raw, &policy.policy)?;
        check(&mut r, &action, &effective)?;
        let env = crate::environment::of(&effective, &action.language);
        r.sections.environment = Some(env.clone());
        if let Some(c) = cache {
            let canonical = serde_json::to_value(&action).unwrap_or(Value::Null);
            let k = Cache::key(&policy.sha256, &env.digest, &canonical);
            if let Some(hit) = c.get(&k) {
                return Ok(Some(hit));
            }
            key = Some(k);
        }
        let jail = execute(&mut r, &action, &effective, source)?;
        validate(&mut r, &action, &effective, &jail, source.interrupt())?;
        Ok(None)
    })();
    let record = match ended {
        Ok(Some(hit)) => {
            stream::replay(source.output(), &hit.record);
            hit_record(r, hit)
        }
        Ok(None) => r.finish(StopReason::Success, Phase::Finalize),
        Err(stop) => r.finish(stop.reason, stop.phase),
    };
    let value = record.to_value();
    if let (Some(c), Some(k)) = (cache, &key) {
        if Cache::cacheable(&record.stop_reason) {
            if let Err(e) = c.put(k, &value) {
                eprintln!("agentjail: {e}");
            }
        }
    }
    Sealed::of(record.stop_reason, value, &policy.policy.redaction)
}

/// The fields of a record that belong to the request that asked, never to the stored run a
/// cache hit cites: who asked, which action (its `id`), under which policy and environment,
/// when and how long, and the verdict fields `finish` writes.
const REQUEST_FIELDS: &[&str] = &[
    "run_id",
    "caller",
    "action",
    "decision",
    "policy",
    "environment",
    "trace",
    "status",
    "stop_reason",
    "phase",
    "agentjail_version",
    "cache",
];

/// A cache hit as a new record of this request: its own `run_id`, `caller`, `action` (with
/// this request's `id`), decision and timing, citing the stored run's outcome (output,
/// streams, error, execution, artifacts) and verdict; `cache.original_run_id` names the
/// stored run. Nothing of the first caller's request travels to this one.
fn hit_record(mut r: Recorder, hit: crate::cache::Hit) -> record::Record {
    let stored = hit.record;
    let reason = stored
        .get("stop_reason")
        .and_then(Value::as_str)
        .and_then(StopReason::parse_stored)
        .unwrap_or(StopReason::Success);
    let phase = stored
        .get("phase")
        .and_then(|p| serde_json::from_value(p.clone()).ok())
        .unwrap_or(Phase::Finalize);
    if let Some(from) = stored.as_object() {
        r.sections.cited = from
            .iter()
            .filter(|(k, _)| !REQUEST_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    }
    r.sections.cache = Some(record::CacheRef {
        hit: true,
        key: hit.key,
        stored_at: hit.stored_at,
        original_run_id: stored.get("run_id").cloned().unwrap_or(Value::Null),
    });
    let mut record = r.finish(reason, Phase::Finalize);
    record.phase = phase;
    record
}

/// `agentjail check`: contract and static check only. Returns (decision JSON, exit code).
pub fn check_only(policy: &Policy, action_spec: &str) -> (Value, i32) {
    match read_action(action_spec) {
        Ok(raw) => {
            let (v, allow) = check_bytes(policy, &raw);
            (v, if allow { 0 } else { 1 })
        }
        Err(e) => (
            json!({"decision": "deny", "reason": "invalid_action:unreadable", "message": e.to_string(), "violations": []}),
            1,
        ),
    }
}

/// The contract and the static check of action bytes: the decision JSON and whether it
/// allows.
pub fn check_bytes(policy: &Policy, raw: &[u8]) -> (Value, bool) {
    let action = match contract::parse_action(raw, policy) {
        Ok(a) => a,
        Err(e) => {
            return (
                json!({"decision": "deny", "reason": e.reason(), "message": e.message(), "violations": []}),
                false,
            )
        }
    };
    let effective = match &action.policy_hints {
        Some(h) => contract::apply_hints(policy, h).0,
        None => policy.clone(),
    };
    let d = contract::check_action(&action, &effective);
    let allow = d.is_allow();
    let mut v = json!(d);
    v["code_hash"] = json!(crate::digest::sha256_hex(action.code.as_bytes()));
    (v, allow)
}

/// `agentjail run`'s options besides the policy and the action.
#[derive(Default)]
pub struct RunOptions {
    pub cache: Option<Cache>,
    pub inputs: Vec<crate::plan::HostInput>,
    pub artifacts_dir: Option<crate::artifacts::ArtifactsDir>,
}

/// `agentjail run`: the whole pipeline for one action (a file path, or `-` for stdin), its
/// jail started on this thread for it; answered from the cache when it holds the job.
pub fn run_action(policy: &LoadedPolicy, action: &str, options: RunOptions) -> Sealed {
    let raw = match read_action(action) {
        Ok(raw) => raw,
        Err(e) => {
            let mut r = Recorder::for_job(record::PolicyRef::of(policy), None);
            let stop = stages::unreadable(&mut r, &e.to_string());
            return r
                .finish(stop.reason, stop.phase)
                .seal(&policy.policy.redaction);
        }
    };
    let mut source = ColdStart::new();
    source.inputs = options.inputs;
    source.artifacts_dir = options.artifacts_dir;
    source.compile_cache = options
        .cache
        .as_ref()
        .and_then(crate::cache::Cache::try_clone);
    job(
        Recorder::new(),
        &raw,
        policy,
        &source,
        options.cache.as_ref(),
    )
}

/// `run`'s flags that need checking before the run.
pub struct RunFlags {
    pub cache: Option<(std::path::PathBuf, u64)>,
    pub inputs: Vec<String>,
    pub artifacts_dir: Option<std::path::PathBuf>,
}

/// A `run` flag that cannot be honoured: the input, cache or artifacts directory error it
/// wraps. Display is that error's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunFlagError {
    Input(crate::inputs::InputError),
    Cache(crate::cache::CacheError),
    Artifacts(crate::artifacts::ArtifactsError),
}

impl std::fmt::Display for RunFlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunFlagError::Input(e) => e.fmt(f),
            RunFlagError::Cache(e) => e.fmt(f),
            RunFlagError::Artifacts(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RunFlagError {}

impl From<crate::inputs::InputError> for RunFlagError {
    fn from(e: crate::inputs::InputError) -> Self {
        RunFlagError::Input(e)
    }
}

impl From<crate::cache::CacheError> for RunFlagError {
    fn from(e: crate::cache::CacheError) -> Self {
        RunFlagError::Cache(e)
    }
}

impl From<crate::artifacts::ArtifactsError> for RunFlagError {
    fn from(e: crate::artifacts::ArtifactsError) -> Self {
        RunFlagError::Artifacts(e)
    }
}

/// Open the cache, resolve the inputs against the policy's host roots, open the artifacts
/// directory: a flag that cannot be honoured stops agentjail (exit 2) before any jail.
pub fn run_options(loaded: &LoadedPolicy, flags: RunFlags) -> Result<RunOptions, RunFlagError> {
    // Side-effect-free checks first; then what creates directories, undone if a later one
    // is refused: a refused flag leaves nothing behind.
    let roots = &loaded.policy.files.host_roots;
    let inputs = flags
        .inputs
        .iter()
        .map(|spec| crate::inputs::resolve(spec, roots))
        .collect::<Result<Vec<_>, _>>()?;
    let artifacts_dir = match flags.artifacts_dir {
        Some(d) => Some(crate::artifacts::ArtifactsDir::open(&d)?),
        None => None,
    };
    let cache = match flags.cache {
        Some((dir, ttl)) => {
            match crate::cache::Cache::open(&dir, std::time::Duration::from_secs(ttl)) {
                Ok(c) => Some(c),
                Err(e) => {
                    if let Some(d) = artifacts_dir {
                        d.discard();
                    }
                    return Err(e.into());
                }
            }
        }
        None => None,
    };
    Ok(RunOptions {
        cache,
        inputs,
        artifacts_dir,
    })
}
