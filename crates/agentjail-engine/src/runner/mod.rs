//! agentjail's runners: the first program the interpreter runs in a jail (python.py for
//! Python, node.cjs for JavaScript: trusted code compiled into this binary and placed
//! read-only in the jail's root).
//!
//! The JavaScript runner speaks the same protocol (the frames on fd 3, the reports on fd 4),
//! defines a global `input()` that reads the next stdin line synchronously, and runs the
//! exact checked bytes as node runs `node /app/main.js` (CommonJS). It has no session mode.
//!
//! It receives the program's source on the job pipe (fd 3) as the exact bytes the checker
//! judged, compiles them from bytes (so a PEP 263 declaration means what it means to
//! CPython) and runs them as `__main__` from `/app/main.py`; the input payload arrives on
//! stdin as before. It reports on the reply pipe (fd 4): `ready` once warm, and the type,
//! message and line of an uncaught exception, taken from the exception object and its
//! traceback, never parsed from text the program printed.
//!
//! Those reports are informational: the program runs in the runner's process and could
//! write to fd 4 itself. No verdict depends on them; the record marks them
//! `"source": "runner"`. Exit status, limits and usage come from the kernel.

use serde::Deserialize;
use serde_json::{json, Value};

/// The runner's source, placed in the jail at [`PATH`].
pub const PYTHON: &str = include_str!("python.py");
/// Where the runner sits in the jail's root (read-only, like the rest of /app).
pub const PATH: &str = "/app/agentjail_runner.py";
/// The filename the program's code is compiled with (tracebacks and `__file__`).
pub const PROGRAM_PATH: &str = "/app/main.py";

/// The JavaScript runner's source, placed in the jail at [`NODE_PATH`].
pub const NODE: &str = include_str!("node.cjs");
/// Where the JavaScript runner sits (`.cjs`: node reads no package.json to decide its type).
pub const NODE_PATH: &str = "/app/agentjail_runner.cjs";
/// The filename the JavaScript program runs as (stacks, `__filename`, `require.main`).
pub const NODE_PROGRAM_PATH: &str = "/app/main.js";

/// A language agentjail has a runner for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Python,
    JavaScript,
}

impl Language {
    /// The language of an action (its `language`, trimmed and lowercased by the contract).
    pub fn of(name: &str) -> Option<Language> {
        match name {
            "python" => Some(Language::Python),
            "javascript" => Some(Language::JavaScript),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
        }
    }

    /// The runner's path in the jail and its source.
    pub fn runner(self) -> (&'static str, &'static str) {
        match self {
            Language::Python => (PATH, PYTHON),
            Language::JavaScript => (NODE_PATH, NODE),
        }
    }
}

/// How the runner serves its jail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One program, then exit with its status (single-use jails).
    Run,
    /// Call after call in one namespace, each ended by a `done` report (sessions).
    Session,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Run => "run",
            Mode::Session => "session",
        }
    }
}

/// The interpreter's argv: the policy's interpreter and flags, the runner, its mode, whether
/// it starts ahead of its job, and the modules to import before the job arrives.
///
/// `ahead`: the jail is started before any job exists (a pool's warm jail, a session), so
/// the runner also warms the interpreter (a synthetic compile and exec) off the job's
/// critical path; a jail built for its job (`run`) skips that work, which would only add to
/// the job's latency.
pub fn argv(
    python: &str,
    python_args: &[String],
    mode: Mode,
    ahead: bool,
    preload: &[String],
) -> Vec<String> {
    let mut argv = vec![python.to_string()];
    argv.extend(python_args.iter().cloned());
    argv.push(PATH.into());
    argv.push(mode.as_str().into());
    argv.push(if ahead { "warm" } else { "cold" }.into());
    argv.extend(preload.iter().cloned());
    argv
}

/// node's argv: node, the policy's flags, the heap limit (the whole memory limit, in MiB:
/// the memory cgroup, not V8, is meant to end a job that needs more; see docs/REFERENCE.md,
/// "JavaScript"), the permission model's one grant (the runner itself) when the flags turn
/// the permission model on, the runner and its mode.
pub fn node_argv(node: &str, node_args: &[String], memory_bytes: u64) -> Vec<String> {
    let mut argv = vec![node.to_string()];
    argv.extend(node_args.iter().cloned());
    argv.push(format!(
        "--max-old-space-size={}",
        (memory_bytes / (1024 * 1024)).max(1)
    ));
    if node_args.iter().any(|a| a == "--experimental-permission") {
        argv.push(format!("--allow-fs-read={NODE_PATH}"));
    }
    argv.push(NODE_PATH.into());
    argv.push(Mode::Run.as_str().into());
    argv
}

/// One job frame: `AJ1 <kind> <length>\n` and the source bytes.
pub fn frame(kind: &str, source: &[u8]) -> Vec<u8> {
    let mut f = format!("AJ1 {kind} {}\n", source.len()).into_bytes();
    f.extend_from_slice(source);
    f
}

/// A session call's frame: as [`frame`], with `call`, the nonce its `done` report must
/// repeat (a report without it is not this call's answer).
pub fn call_frame(source: &[u8], call: &str) -> Vec<u8> {
    let mut f = format!("AJ1 exec {} {call}\n", source.len()).into_bytes();
    f.extend_from_slice(source);
    f
}

/// One report of the runner on the reply pipe (fd 4): a JSON line whose `event` names the
/// variant. Every reader of the reply pipe goes through [`Event::parse`]: the line is read
/// by the strict reader first (bounded, duplicate keys refused: it is the jail's text,
/// untrusted), then as this enum. A field of the wrong type reads as absent (the reports
/// are informational: see the module documentation).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The runner is warm and waits for its job (`{"event": "ready"}`).
    Ready,
    /// An uncaught exception of the program.
    Error(ErrorReport),
    /// A session call ended: `call` repeats the call's nonce; `ok` and either the value's
    /// text or the exception.
    Done {
        #[serde(default, deserialize_with = "lenient")]
        call: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        ok: Option<bool>,
        #[serde(default, deserialize_with = "lenient")]
        value: Option<String>,
        #[serde(default, deserialize_with = "lenient")]
        error: Option<ErrorReport>,
    },
}

/// An exception as the runner reports it: its type's name, message and position.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ErrorReport {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub line: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub column: Option<u64>,
}

/// A field of the wrong type reads as absent rather than failing the whole report.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// Longest exception type and message kept from a report.
const MAX_TYPE_CHARS: usize = 200;
const MAX_MESSAGE_CHARS: usize = 2000;
/// Longest value text kept from a session call's `done` report.
const MAX_VALUE_CHARS: usize = 10_000;

impl Event {
    /// One reply line from the jail, read strictly (replies are the jail's text: untrusted);
    /// None when it is not a well-formed report.
    pub fn parse(line: &[u8]) -> Option<Event> {
        let v = agentjail_json::parse_strict(line, &reply_limits()).ok()?;
        serde_json::from_value(v).ok()
    }
}

impl ErrorReport {
    /// The record's `error` object (`type`, `message`, `line`, `column`, `source:
    /// "runner"`), or None when the type is not a plausible exception name.
    pub fn to_record(&self) -> Option<Value> {
        let kind = &self.kind;
        let kind_ok = !kind.is_empty()
            && kind.chars().count() <= MAX_TYPE_CHARS
            && kind
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '<' || c == '>');
        if !kind_ok {
            return None;
        }
        let message: String = self
            .message
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(MAX_MESSAGE_CHARS)
            .collect();
        let position = |p: Option<u64>| p.filter(|n| *n <= u32::MAX as u64);
        Some(json!({
            "type": kind,
            "message": message,
            "line": position(self.line),
            "column": position(self.column),
            "source": "runner",
        }))
    }
}

/// How a reply line is read: the jail's text, so bounded (64 KiB, depth 8) and strict.
fn reply_limits() -> agentjail_json::ReadLimits {
    agentjail_json::ReadLimits {
        max_depth: 8,
        max_bytes: 64 * 1024,
        ..agentjail_json::ReadLimits::default()
    }
}

/// Whether a reply line is the `done` report of the call with nonce `call`.
pub fn is_done_of(line: &[u8], call: &str) -> bool {
    matches!(Event::parse(line), Some(Event::Done { call: Some(c), .. }) if c == call)
}

/// The last well-formed `error` report in the runner's replies, as the record's `error`
/// object, or None.
pub fn error_report(replies: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(replies);
    text.lines()
        .rev()
        .find_map(|line| match Event::parse(line.as_bytes())? {
            Event::Error(e) => e.to_record(),
            _ => None,
        })
}

/// A session call's answer, from its `done` report.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub ok: bool,
    /// The value's text (at most [`MAX_VALUE_CHARS`]), or null.
    pub value: Value,
    /// The exception as the record's `error` object, or null.
    pub error: Value,
}

/// The last `done` report of the call with nonce `call` that says whether it went well.
pub fn done_report(replies: &[u8], call: &str) -> Option<Done> {
    let text = String::from_utf8_lossy(replies);
    text.lines().rev().find_map(|line| {
        let Event::Done {
            call: Some(c),
            ok: Some(ok),
            value,
            error,
        } = Event::parse(line.as_bytes())?
        else {
            return None;
        };
        (c == call).then(|| Done {
            ok,
            value: value.map_or(Value::Null, |s| {
                Value::String(s.chars().take(MAX_VALUE_CHARS).collect())
            }),
            error: error.and_then(|e| e.to_record()).unwrap_or(Value::Null),
        })
    })
}

/// The workspace runner's `done` report of one command (src/runner/workspace.py): the
/// command's wait status and counters, as it saw them. Every field is the jail's word (a
/// field of the wrong type reads as absent); the record takes the kernel's where it has one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CommandReport {
    #[serde(default, deserialize_with = "lenient")]
    pub exit_code: Option<i64>,
    #[serde(default, deserialize_with = "lenient")]
    pub signal: Option<i64>,
    #[serde(default, deserialize_with = "lenient")]
    pub timed_out: Option<bool>,
    #[serde(default, deserialize_with = "lenient")]
    pub stdout_bytes: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub stderr_bytes: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub wall_us: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub maxrss_kb: Option<u64>,
    /// A background command's own CPU time (its wait4 rusage), in its final report.
    #[serde(default, deserialize_with = "lenient")]
    pub cpu_us: Option<u64>,
    /// A background command was started (the start's report).
    #[serde(default, deserialize_with = "lenient")]
    pub started: Option<bool>,
    /// A background command still runs (a wait's report at its timeout).
    #[serde(default, deserialize_with = "lenient")]
    pub running: Option<bool>,
    /// The runner has no background command by that id.
    #[serde(default, deserialize_with = "lenient")]
    pub unknown: Option<bool>,
}

/// The workspace runner's last `done` report of the command with nonce `call`, read
/// strictly (the jail's text); None when there is none well-formed.
pub fn command_report(replies: &[u8], call: &str) -> Option<CommandReport> {
    let limits = reply_limits();
    String::from_utf8_lossy(replies)
        .lines()
        .rev()
        .find_map(|line| {
            is_done_of(line.as_bytes(), call)
                .then(|| agentjail_json::parse_strict(line.as_bytes(), &limits).ok())
                .flatten()
        })
        .and_then(|v| serde_json::from_value(v).ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_done_that_repeats_the_calls_nonce_ends_it() {
        let f = call_frame(b"x = 1", "00ff");
        assert_eq!(f, b"AJ1 exec 5 00ff\nx = 1");
        assert!(is_done_of(
            br#"{"event": "done", "call": "00ff", "ok": true}"#,
            "00ff"
        ));
        for forged in [
            &br#"{"event": "done", "ok": true}"#[..],
            br#"{"event": "done", "call": null, "ok": true}"#,
            br#"{"event": "done", "call": "00fe", "ok": true}"#,
            br#"{"event": "error", "call": "00ff"}"#,
            br#"{"event": "done", "call": "00ff", "call": "00ff"}"#,
            b"garbage{\"event\": \"done\", \"call\": \"00ff\"}",
        ] {
            assert!(
                !is_done_of(forged, "00ff"),
                "{}",
                String::from_utf8_lossy(forged)
            );
        }
    }

    use super::*;

    #[test]
    fn node_gets_the_policy_flags_the_heap_limit_and_one_read_grant() {
        let flags = vec!["--experimental-permission".to_string()];
        let argv = node_argv("/usr/bin/node", &flags, 256 * 1024 * 1024);
        assert_eq!(
            argv,
            [
                "/usr/bin/node",
                "--experimental-permission",
                "--max-old-space-size=256",
                "--allow-fs-read=/app/agentjail_runner.cjs",
                "/app/agentjail_runner.cjs",
                "run"
            ]
        );
        let argv = node_argv("/usr/bin/node", &[], 1024 * 1024 * 1024);
        assert!(!argv.iter().any(|a| a.starts_with("--allow")));
        assert_eq!(Language::of("javascript"), Some(Language::JavaScript));
        assert_eq!(Language::of("ruby"), None);
    }

    #[test]
    fn frames_carry_the_exact_bytes() {
        let f = frame("run", b"print(1)\n\xff");
        assert_eq!(f, b"AJ1 run 10\nprint(1)\n\xff");
    }

    #[test]
    fn the_last_well_formed_error_report_wins() {
        let replies = b"{\"event\": \"ready\"}\n{\"event\": \"error\", \"type\": \"ZeroDivisionError\", \"message\": \"division by zero\", \"line\": 4, \"column\": null}\n";
        let e = error_report(replies).unwrap();
        assert_eq!(e["type"], "ZeroDivisionError");
        assert_eq!(e["line"], 4);
        assert_eq!(e["source"], "runner");
        let bad = b"{\"event\": \"error\", \"type\": \"x\\ny\", \"line\": 1}\n";
        assert_eq!(error_report(bad), None);
        assert_eq!(error_report(b"garbage\n"), None);
        // A field of the wrong type reads as absent; an unknown event is no report.
        let odd = b"{\"event\": \"error\", \"type\": \"E\", \"message\": 5, \"line\": -1}\n";
        let e = error_report(odd).unwrap();
        assert_eq!(
            (e["message"].as_str(), e["line"].is_null()),
            (Some(""), true)
        );
        assert_eq!(Event::parse(b"{\"event\": \"exit\"}"), None);
        assert_eq!(Event::parse(b"{\"event\": \"ready\"}"), Some(Event::Ready));
    }

    #[test]
    fn a_done_report_answers_only_its_call() {
        let replies = b"{\"event\": \"done\", \"call\": \"01\", \"ok\": false, \"error\": {\"type\": \"KeyError\", \"message\": \"k\", \"line\": 2}}\n{\"event\": \"done\", \"call\": \"02\", \"ok\": true, \"value\": \"3\"}\n{\"event\": \"done\", \"call\": \"01\"}\n";
        let d = done_report(replies, "01").unwrap();
        assert!(!d.ok);
        assert_eq!(
            (d.value.clone(), d.error["type"].clone()),
            (Value::Null, json!("KeyError"))
        );
        let d = done_report(replies, "02").unwrap();
        assert_eq!((d.ok, d.value, d.error), (true, json!("3"), Value::Null));
        assert_eq!(done_report(replies, "03"), None);
    }

    #[test]
    fn a_commands_report_is_the_last_done_of_its_nonce_with_bad_fields_absent() {
        let replies = concat!(
            r#"{"event": "done", "call": "aa", "exit_code": 3}"#,
            "\n",
            r#"{"event": "done", "call": "bb", "exit_code": 1}"#,
            "\n",
            r#"{"event": "done", "call": "aa", "exit_code": 0, "signal": "x", "timed_out": 1, "#,
            r#""maxrss_kb": 18446744073709551615, "extra": [1]}"#,
            "\n",
            "not json\n",
        );
        let r = super::command_report(replies.as_bytes(), "aa").expect("a report");
        assert_eq!(r.exit_code, Some(0));
        assert_eq!((r.signal, r.timed_out), (None, None));
        assert_eq!(r.maxrss_kb, Some(u64::MAX));
        assert_eq!(super::command_report(replies.as_bytes(), "cc"), None);
    }
}
