//! The compile cache (issue 39, "judging at the speed of the job"): a compile step's outcome
//! stored under a key that covers everything that decides it, handed to a later job of the
//! same program instead of compiling it again.
//!
//! - It holds **compiler output only**: the `compile` section of a compile that ended on its
//!   own (`ok`, or `compile_error` with the compiler's exit status) and, for `ok`, the files
//!   its output directory held. Never a run's output, never a compile the supervisor stopped
//!   (a timeout or a memory limit depends on the machine's load, not on the program).
//! - The key is sha256 over agentjail's version, the language, its entrypoint, the whole
//!   `[languages.<lang>]` table as the loader resolved it (the toolchain's resolved path and
//!   version, the compile argv, the compile limits, the variables and groups) and the
//!   program's exact bytes. A different compiler, flag, limit or byte is a different key.
//!   Two callers who send the same program under the same policy get the same compiler
//!   output either way; the record says `cached: true`, so a caller learns that this exact
//!   program was compiled before under this policy (docs/SECURITY.md, "The compile cache").
//! - Writers: agentjail only, from what the compile jail's output directory held when the
//!   jail was gone (crate::pipeline::compile::collect); no jail sees the cache.
//! - Where: `serve` (and HTTP, MCP) keeps it in memory, bounded by [`MEMORY_MAX_BYTES`]
//!   (least recently used entries leave first); `run --cache DIR` keeps it in the result
//!   cache's directory (crate::cache: private files, atomic renames, the same TTL). `run`
//!   without `--cache` has none.

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

/// Where the run jail holds the compile step's output (crate::pipeline::compile::RUN_BIN):
/// a stored file lies beneath it or is refused.
pub const RUN_DIR: &str = "/app/bin";

/// What the in-memory cache holds at most, bytes of compile output (entries above it leave,
/// least recently used first).
pub const MEMORY_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// A file the compile handed on: its path in the run jail, its mode, its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    pub path: String,
    pub mode: u32,
    pub contents: Vec<u8>,
}

/// One compile's stored outcome: its record's `compile` section (an object, as
/// crate::pipeline::record::CompileRecord serialises) and the files it handed on.
#[derive(Debug, Clone)]
pub struct Stored {
    pub record: Value,
    pub files: Vec<StoredFile>,
}

impl Stored {
    fn bytes(&self) -> u64 {
        let files: usize = self.files.iter().map(|f| f.contents.len()).sum();
        (files + self.record.to_string().len()) as u64
    }

    /// Whether a `compile` section's outcome may be stored: the compiler ended on its own,
    /// with success or its own error (an exit status, no signal), and nothing stopped it.
    pub fn storable(record: &Value) -> bool {
        record["stopped_by"].is_null()
            && record["signal"].is_null()
            && matches!(record["status"].as_str(), Some("ok" | "compile_error"))
            && record["exit_code"].is_i64()
    }
}

/// Where compile outcomes are kept.
pub trait CompileStore: Send + Sync {
    fn get(&self, key: &str) -> Option<Stored>;
    fn put(&self, key: &str, stored: &Stored);
}

/// The key of a compile: see the module's comment.
pub fn key(language: &str, entrypoint: &str, toolchain: &Value, source: &[u8]) -> String {
    let mut h = Sha256::new();
    for part in [
        b"agentjail-compile-v1".as_slice(),
        env!("CARGO_PKG_VERSION").as_bytes(),
        language.as_bytes(),
        entrypoint.as_bytes(),
        toolchain.to_string().as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update((source.len() as u64).to_le_bytes());
    h.update(source);
    format!("compile-{:x}", h.finalize())
}

/// `serve`'s cache: in memory, bounded, least recently used out first.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<String, (Stored, u64)>,
    bytes: u64,
    clock: u64,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

impl CompileStore for MemoryStore {
    fn get(&self, key: &str) -> Option<Stored> {
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        e.clock += 1;
        let now = e.clock;
        let (stored, used) = e.map.get_mut(key)?;
        *used = now;
        Some(stored.clone())
    }

    fn put(&self, key: &str, stored: &Stored) {
        let size = stored.bytes();
        if size > MEMORY_MAX_BYTES {
            return;
        }
        let mut e = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        e.clock += 1;
        let now = e.clock;
        if let Some((old, _)) = e.map.remove(key) {
            e.bytes -= old.bytes();
        }
        while e.bytes + size > MEMORY_MAX_BYTES {
            let Some(oldest) = e
                .map
                .iter()
                .min_by_key(|(_, (_, u))| *u)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((old, _)) = e.map.remove(&oldest) {
                e.bytes -= old.bytes();
            }
        }
        e.bytes += size;
        e.map.insert(key.to_string(), (stored.clone(), now));
    }
}

/// `run --cache DIR`'s: entries in the result cache's directory, under keys of their own
/// (`compile-…`, never a result key).
impl CompileStore for crate::cache::Cache {
    fn get(&self, key: &str) -> Option<Stored> {
        let hit = crate::cache::Cache::get(self, key)?;
        let stored = from_value(&hit.record);
        if stored.is_none() {
            eprintln!("agentjail: cache: ignoring compile entry {key}: corrupt");
        }
        stored
    }

    fn put(&self, key: &str, stored: &Stored) {
        if let Err(e) = crate::cache::Cache::put(self, key, &to_value(stored)) {
            eprintln!("agentjail: {e}");
        }
    }
}

fn to_value(s: &Stored) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let files: Vec<Value> = s
        .files
        .iter()
        .map(|f| json!({"path": f.path, "mode": f.mode, "base64": b64.encode(&f.contents)}))
        .collect();
    json!({"compile": s.record, "files": files})
}

fn from_value(v: &Value) -> Option<Stored> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let record = v.get("compile").filter(|c| c.is_object())?.clone();
    let files = v
        .get("files")?
        .as_array()?
        .iter()
        .map(|f| {
            let path = f.get("path")?.as_str()?.to_string();
            let mode = u32::try_from(f.get("mode")?.as_u64()?).ok()?;
            let contents = b64.decode(f.get("base64")?.as_str()?).ok()?;
            // Only what collect() hands on: files under the run jail's directory, 0444 or 0555.
            let under = path
                .strip_prefix(RUN_DIR)
                .is_some_and(|rest| rest.starts_with('/') && !rest.contains("/.."));
            (under && matches!(mode, 0o444 | 0o555)).then_some(StoredFile {
                path,
                mode,
                contents,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Stored { record, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: &str) -> Value {
        json!({"language": "c", "status": status, "exit_code": 0, "signal": null,
               "stopped_by": null, "stderr": "", "cached": false})
    }

    fn stored(n: usize) -> Stored {
        Stored {
            record: record("ok"),
            files: vec![StoredFile {
                path: "/app/bin/main".into(),
                mode: 0o555,
                contents: vec![7; n],
            }],
        }
    }

    #[test]
    fn every_input_that_decides_the_compile_changes_the_key() {
        let tc = json!({"compile": ["gcc", "-O2"]});
        let base = key("c", "main.c", &tc, b"int main(){}");
        assert_ne!(base, key("cpp", "main.c", &tc, b"int main(){}"));
        assert_ne!(base, key("c", "main.cpp", &tc, b"int main(){}"));
        assert_ne!(
            base,
            key(
                "c",
                "main.c",
                &json!({"compile": ["gcc", "-O0"]}),
                b"int main(){}"
            )
        );
        assert_ne!(base, key("c", "main.c", &tc, b"int main(){ }"));
        assert_eq!(base, key("c", "main.c", &tc, b"int main(){}"));
    }

    #[test]
    fn only_outcomes_of_the_compiler_itself_are_stored() {
        assert!(Stored::storable(&record("ok")));
        let mut e = record("compile_error");
        e["exit_code"] = json!(1);
        assert!(Stored::storable(&e));
        for status in ["compile_timeout", "compile_memory_limit", "max_seconds"] {
            assert!(!Stored::storable(&record(status)), "{status}");
        }
        let mut killed = record("compile_error");
        killed["signal"] = json!("SIGKILL");
        killed["exit_code"] = Value::Null;
        assert!(!Stored::storable(&killed));
        let mut stopped = record("compile_error");
        stopped["stopped_by"] = json!("code_pids_limit");
        assert!(!Stored::storable(&stopped));
    }

    #[test]
    fn the_memory_store_stays_within_its_bound_least_recently_used_out_first() {
        let m = MemoryStore::new();
        // Four entries do not fit (each file plus its section is over a quarter): the fourth
        // put makes room by sending out the least recently used one.
        let quarter = (MEMORY_MAX_BYTES / 4) as usize;
        m.put("a", &stored(quarter));
        m.put("b", &stored(quarter));
        assert!(m.get("a").is_some()); // a is now more recent than b
        m.put("c", &stored(quarter));
        m.put("d", &stored(quarter));
        assert!(m.get("b").is_none(), "the least recently used left first");
        for kept in ["a", "c", "d"] {
            assert!(m.get(kept).is_some(), "{kept}");
        }
        let e = m.inner.lock().unwrap();
        assert!(e.bytes <= MEMORY_MAX_BYTES);
        drop(e);
        m.put("huge", &stored(MEMORY_MAX_BYTES as usize + 1));
        assert!(m.get("huge").is_none());
    }

    #[test]
    fn a_disk_entry_round_trips_and_a_file_outside_the_run_directory_is_refused() {
        let s = stored(10);
        let back = from_value(&to_value(&s)).expect("round trip");
        assert_eq!(back.files, s.files);
        assert_eq!(back.record["status"], "ok");
        for (path, mode) in [
            ("/etc/passwd", 0o444),
            ("/app/bin/../x", 0o444),
            ("/app/binx", 0o444),
            ("/app/bin/main", 0o4755),
        ] {
            let mut v = to_value(&s);
            v["files"][0]["path"] = json!(path);
            v["files"][0]["mode"] = json!(mode);
            assert!(from_value(&v).is_none(), "{path} {mode:o}");
        }
    }
}
