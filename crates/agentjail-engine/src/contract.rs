//! The action contract: what an agent may hand to agentjail, and how it is validated.
//!
//! An action is one JSON object with exactly these keys (unknown keys are rejected, so a
//! typo such as `policy_hint` cannot silently drop a restriction):
//!
//! | key             | required | meaning                                                    |
//! |-----------------|----------|------------------------------------------------------------|
//! | `id`            | yes      | non-blank string, trimmed                                  |
//! | `language`      | yes      | non-blank string, trimmed and lowercased                   |
//! | `entrypoint`    | yes      | the language's file: `main.py`, `main.js` (see below)      |
//! | `code`          | yes      | non-blank string, at most `max_code_chars` characters      |
//! | `input_payload` | yes¹     | object, at most `max_payload_bytes` serialized             |
//! | `stdin`         | no¹      | string: the program's stdin, byte for byte (UTF-8), at most `max_payload_bytes` |
//! | `output_mode`   | no       | `json` (default: one JSON object on stdout) or `text` (judge mode) |
//! | `output_schema` | no       | JSON Schema (draft 2020-12) for what the program prints (`json` mode only) |
//! | `policy_hints`  | no       | requests that may only tighten the policy (see [`apply_hints`]) |
//! | `files`         | no       | input files, read-only under /app/in (see [`parse_files`])  |
//!
//! ¹ exactly one of `input_payload` and `stdin`; in `text` mode neither is an empty stdin.
//!
//! # Judge mode
//!
//! RL and evaluation pipelines run programs that read plain stdin and print plain text.
//! `"stdin": "..."` gives the program those bytes instead of the payload's JSON line, and
//! `"output_mode": "text"` makes exit 0 the success: stdout and stderr are the result and
//! the record has no `output`. Every stop reason, cap and limit is unchanged. A policy may
//! refuse text mode (`languages.output_modes`): `invalid_request:output_mode_denied`.
//!
//! # Order of validation
//!
//! The order is part of the contract because the first failure is the reason reported:
//!
//! 1. raw size cap ([`MAX_ACTION_BYTES`]) before anything is parsed, so a huge document
//!    costs no parsing;
//! 2. UTF-8 and JSON syntax (`non_json`), then `not_object`, then `unknown_field:<name>`;
//! 3. the seed's field checks in the seed's order: `id`, `language`, `entrypoint`, `code`;
//! 4. `policy_hints` (shape, then `network_access`), **before** the code-size check, so a
//!    tighter `max_code_chars` hint applies to this very action;
//! 5. `code_too_long` against the tighter of the policy and the hint;
//! 6. `stdin` (a string, never beside `input_payload`) or `input_payload` (object), then
//!    `payload_too_large`;
//! 7. `entrypoint_path`, `entrypoint_denied` (the seed checks these after the payload);
//! 8. `files` (paths, contents, caps);
//! 9. `output_mode`, then whether the policy accepts it (`invalid_request:output_mode_denied`);
//! 10. `output_schema` last, because compiling a schema is the most expensive step (refused
//!     in `text` mode, which has no output to validate).
//!
//! # The entrypoint
//!
//! Each language agentjail executes runs from one file name ([`entrypoint_for`]): `main.py`
//! for `python`, `main.js` for `javascript`, `main.c`, `main.cpp`, `Main.java` (class
//! `Main`), `main.go`, `main.rs` and `main.sh` for `c`, `cpp`, `java`, `go`, `rust`, `bash`. When the policy executes the action's language
//! the entrypoint must be that language's (`python` with `main.js` is `entrypoint_denied`).
//! For a language the policy does not execute, any of [`ENTRYPOINTS`] passes the contract and
//! the check then stops the run with `language_denied_policy` or `language_denied_execution`,
//! so the seed's "change the language to javascript" case (entrypoint still `main.py`) keeps
//! its seed reason.

use crate::policy::Policy;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;

/// Largest action document accepted, in bytes, checked before parsing.
pub const MAX_ACTION_BYTES: usize = 16 * 1024 * 1024;

/// The entrypoint of a Python action (the seed's only one).
pub const ENTRYPOINT: &str = "main.py";

/// Every entrypoint agentjail accepts, one per language it executes.
pub const ENTRYPOINTS: [&str; 8] = [
    ENTRYPOINT,
    "main.js",
    "main.c",
    "main.cpp",
    "Main.java",
    "main.go",
    "main.rs",
    "main.sh",
];

/// The file a language's program runs from, for the languages agentjail executes.
pub fn entrypoint_for(language: &str) -> Option<&'static str> {
    match language {
        "python" => Some(ENTRYPOINT),
        "javascript" => Some("main.js"),
        "c" => Some("main.c"),
        "cpp" => Some("main.cpp"),
        "java" => Some("Main.java"),
        "go" => Some("main.go"),
        "rust" => Some("main.rs"),
        "bash" => Some("main.sh"),
        _ => None,
    }
}

/// Values of `policy_hints.network_access` that mean "no network".
pub const NETWORK_DENIED_VALUES: [&str; 3] = ["denied", "none", "off"];

const KNOWN_FIELDS: [&str; 10] = [
    "files",
    "id",
    "language",
    "entrypoint",
    "code",
    "input_payload",
    "stdin",
    "output_mode",
    "output_schema",
    "policy_hints",
];

/// What a successful run's result is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// One JSON object on stdout, validated against `output_schema` (the seed's contract).
    #[default]
    Json,
    /// Judge mode: exit 0 is success; stdout and stderr are the result.
    Text,
}

impl OutputMode {
    pub fn is_json(&self) -> bool {
        *self == OutputMode::Json
    }

    pub fn name(self) -> &'static str {
        match self {
            OutputMode::Json => "json",
            OutputMode::Text => "text",
        }
    }
}

const KNOWN_HINTS: [&str; 5] = [
    "allowed_languages",
    "max_code_chars",
    "exec_timeout_seconds",
    "compile_timeout_seconds",
    "network_access",
];

/// A validated action.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    /// Trimmed, non-empty.
    pub id: String,
    /// Trimmed and lowercased.
    pub language: String,
    /// One of [`ENTRYPOINTS`] once validated; [`entrypoint_for`] the language when the policy
    /// executes it.
    pub entrypoint: String,
    /// The source exactly as sent (not trimmed: the hash covers these bytes).
    pub code: String,
    /// A JSON object, fed to the program on stdin as one line; null when `stdin` is given.
    pub input_payload: Value,
    /// The program's stdin, byte for byte, instead of the payload's line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Left out of the serialization (and so of cache keys) when it is the default.
    #[serde(skip_serializing_if = "OutputMode::is_json")]
    pub output_mode: OutputMode,
    /// A JSON Schema that compiled under draft 2020-12, or a boolean schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_hints: Option<PolicyHints>,
    /// Input files, in the order given (validated paths, decoded contents).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<InputFile>,
}

/// One input file: a relative, normalised path under /app/in and its bytes, and where a
/// symlink to it is made besides ([`LINK_DIRS`]), if anywhere. Serialized as its path, size,
/// sha256 and link (the cache key covers the contents through the digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    pub path: String,
    pub contents: Vec<u8>,
    /// An absolute path beneath one of [`LINK_DIRS`] (normalised, as [`file_path_problem`]
    /// accepts beneath it): a read-only symlink to `/app/in/PATH` is made there, so a program
    /// that opens a file by its name in its working directory (SandboxFusion's) finds it.
    pub link: Option<String>,
}

pub use crate::plan::LINK_DIRS;

impl Serialize for InputFile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        use sha2::Digest;
        let mut st = s.serialize_struct("InputFile", 4)?;
        st.serialize_field("path", &self.path)?;
        st.serialize_field("bytes", &self.contents.len())?;
        st.serialize_field(
            "sha256",
            &format!("{:x}", sha2::Sha256::digest(&self.contents)),
        )?;
        if let Some(link) = &self.link {
            st.serialize_field("link", link)?;
        }
        st.end()
    }
}

/// Requests an action makes about its own policy. They can only tighten it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PolicyHints {
    /// Lowercased, trimmed language names.
    pub allowed_languages: Option<Vec<String>>,
    pub max_code_chars: Option<usize>,
    /// Finite and positive.
    pub exec_timeout_seconds: Option<f64>,
    /// Finite and positive: caps a compile step's wall time (`/run_code`'s `compile_timeout`).
    pub compile_timeout_seconds: Option<f64>,
    /// One of [`NETWORK_DENIED_VALUES`] (anything else is refused by [`parse_action`]).
    pub network_access: Option<String>,
}

/// A hint that was not applied, and why. Goes into the record so the agent can see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HintNote {
    pub hint: String,
    pub requested: Value,
    pub effective: Value,
    pub note: String,
}

/// Why an action was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContractError {
    /// The action itself is malformed: stop reason `invalid_action:<what>`.
    InvalidAction { what: String, message: String },
    /// The action is well formed but asks for something agentjail never grants: stop
    /// reason `invalid_request:<what>` (e.g. `network_access_must_be_denied`).
    InvalidRequest { what: String, message: String },
}

impl ContractError {
    fn action(what: impl Into<String>, message: impl Into<String>) -> Self {
        ContractError::InvalidAction {
            what: what.into(),
            message: message.into(),
        }
    }

    /// The stop reason, spelled as in the seed: `invalid_action:code_too_long`.
    /// The same text as the record's stop reason, its suffix escaped alike
    /// (`StopReason::suffix`).
    pub fn reason(&self) -> String {
        self.stop_reason().to_string()
    }

    /// The record's stop reason.
    pub fn stop_reason(&self) -> crate::verdict::StopReason {
        use crate::verdict::StopReason;
        match self {
            ContractError::InvalidAction { what, .. } => StopReason::InvalidAction(what.clone()),
            ContractError::InvalidRequest { what, .. } => StopReason::InvalidRequest(what.clone()),
        }
    }

    /// A sentence for a human: what was wrong and what to send instead.
    pub fn message(&self) -> &str {
        match self {
            ContractError::InvalidAction { message, .. }
            | ContractError::InvalidRequest { message, .. } => message,
        }
    }

    /// True for `invalid_request:*` (a refused request rather than a malformed action).
    pub fn is_invalid_request(&self) -> bool {
        matches!(self, ContractError::InvalidRequest { .. })
    }
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason(), self.message())
    }
}

impl std::error::Error for ContractError {}

/// Validate raw action bytes against the contract and the policy's budget.
///
/// See the module documentation for the order of the checks. Never panics.
pub fn parse_action(bytes: &[u8], policy: &Policy) -> Result<Action, ContractError> {
    if bytes.len() > MAX_ACTION_BYTES {
        return Err(ContractError::action(
            "too_large",
            format!(
                "the action is {} bytes; the limit is {MAX_ACTION_BYTES} bytes before parsing",
                bytes.len()
            ),
        ));
    }
    let raw = agentjail_json::parse_strict(bytes, &read_limits()).map_err(|e| json_error(&e))?;
    let Value::Object(obj) = raw else {
        return Err(ContractError::action(
            "not_object",
            "the action must be a JSON object with id, language, entrypoint, code and input_payload",
        ));
    };
    validate_object(obj, policy)
}

/// The strict reader's bounds for an action: its size cap, and the defaults for depth and
/// numbers (every record nests the action's values a few levels deep at most).
fn read_limits() -> agentjail_json::ReadLimits {
    agentjail_json::ReadLimits {
        max_bytes: MAX_ACTION_BYTES,
        ..agentjail_json::ReadLimits::default()
    }
}

/// A strict-reader error as the contract's reason: `duplicate_key:<path>` (the JSON pointer
/// of the repeated member, without its leading slash), `too_deep`, `number_out_of_range`,
/// `too_large`, or `non_json`. A duplicate key is never resolved: the first and last copy
/// could each drop a restriction the other carries.
fn json_error(e: &agentjail_json::JsonError) -> ContractError {
    let what = match (e.what(), e.pointer()) {
        ("duplicate_key", Some(p)) => format!("duplicate_key:{}", p.trim_start_matches('/')),
        (w, _) => w.to_string(),
    };
    ContractError::action(
        what,
        format!("{e}; send one JSON object with each key once"),
    )
}

fn validate_object(mut obj: Map<String, Value>, policy: &Policy) -> Result<Action, ContractError> {
    refuse_unknown_fields(&obj)?;
    let id = non_blank(&obj, "id")?.trim().to_string();
    let language = non_blank(&obj, "language")?.trim().to_lowercase();
    let entrypoint = non_blank(&obj, "entrypoint")?.trim().to_string();
    let code = non_blank(&obj, "code")?.to_string();
    let policy_hints = match obj.get("policy_hints") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_hints(v)?),
    };
    code_size(&code, policy, policy_hints.as_ref())?;
    // A text-mode program given neither reads an empty stdin: plain programs often take none.
    let text_mode = obj.get("output_mode").and_then(Value::as_str) == Some("text");
    let (input_payload, stdin) = match obj.remove("stdin") {
        None if text_mode && !obj.contains_key("input_payload") => {
            (Value::Null, Some(String::new()))
        }
        None => (payload(obj.remove("input_payload"), policy)?, None),
        Some(v) => (Value::Null, Some(stdin_field(v, &obj, policy)?)),
    };
    check_entrypoint(&entrypoint, &language, policy)?;
    let files = match obj.remove("files") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => parse_files(&v, &policy.files)?,
    };
    let output_mode = output_mode(obj.remove("output_mode"), policy)?;
    let output_schema = match obj.remove("output_schema") {
        None => None,
        Some(_) if !output_mode.is_json() => {
            return Err(ContractError::action(
                "output_schema",
                "output_schema applies to output_mode \"json\" only: a text-mode run has no output object to validate",
            ))
        }
        Some(schema) => Some(validate_schema(schema)?),
    };
    Ok(Action {
        id,
        language,
        entrypoint,
        code,
        input_payload,
        stdin,
        output_mode,
        output_schema,
        policy_hints,
        files,
    })
}

fn refuse_unknown_fields(obj: &Map<String, Value>) -> Result<(), ContractError> {
    let mut unknown: Vec<&String> = obj
        .keys()
        .filter(|k| !KNOWN_FIELDS.contains(&k.as_str()))
        .collect();
    unknown.sort();
    match unknown.first() {
        None => Ok(()),
        Some(name) => Err(ContractError::action(
            // The name as sent: the stop reason's suffix rule escapes it (`%XX`) and cuts it
            // (`~` at 96 characters), as REFERENCE says of every suffix.
            format!("unknown_field:{name}"),
            format!(
                "unknown field {name:?}; allowed fields are {}",
                KNOWN_FIELDS.join(", ")
            ),
        )),
    }
}

/// `code_too_long` against the tighter of the policy and the hint.
fn code_size(
    code: &str,
    policy: &Policy,
    hints: Option<&PolicyHints>,
) -> Result<(), ContractError> {
    let mut max_chars = policy.budget.max_code_chars;
    if let Some(hint) = hints.and_then(|h| h.max_code_chars) {
        max_chars = max_chars.min(hint);
    }
    let chars = code.chars().count();
    if chars > max_chars {
        return Err(ContractError::action(
            "code_too_long",
            format!("code is {chars} characters; the limit is {max_chars}"),
        ));
    }
    Ok(())
}

/// The input payload: a JSON object within the policy's size.
fn payload(v: Option<Value>, policy: &Policy) -> Result<Value, ContractError> {
    let input_payload = v.unwrap_or(Value::Null);
    if !input_payload.is_object() {
        return Err(ContractError::action(
            "input_payload",
            "input_payload must be a JSON object (it is sent to the program on stdin)",
        ));
    }
    let payload_bytes = serde_json::to_vec(&input_payload)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    let max_payload = policy.budget.max_payload_bytes.0;
    if payload_bytes as u64 > max_payload {
        return Err(ContractError::action(
            "payload_too_large",
            format!(
                "input_payload is {payload_bytes} bytes serialized; the limit is {max_payload}"
            ),
        ));
    }
    Ok(input_payload)
}

/// `stdin`: a string (its UTF-8 bytes are the program's stdin), never beside
/// `input_payload`, within the policy's payload size.
fn stdin_field(
    v: Value,
    obj: &Map<String, Value>,
    policy: &Policy,
) -> Result<String, ContractError> {
    if obj.contains_key("input_payload") {
        return Err(ContractError::action(
            "stdin",
            "stdin and input_payload are exclusive: send the program's input one way",
        ));
    }
    let Value::String(text) = v else {
        return Err(ContractError::action(
            "stdin",
            "stdin must be a string (its UTF-8 bytes are given to the program on stdin)",
        ));
    };
    let max_payload = policy.budget.max_payload_bytes.0;
    if text.len() as u64 > max_payload {
        return Err(ContractError::action(
            "payload_too_large",
            format!("stdin is {} bytes; the limit is {max_payload}", text.len()),
        ));
    }
    Ok(text)
}

/// `output_mode`: `json` (the default) or `text`, and one the policy accepts.
fn output_mode(v: Option<Value>, policy: &Policy) -> Result<OutputMode, ContractError> {
    let mode = match v.as_ref().map(|v| v.as_str()) {
        None => OutputMode::Json,
        Some(Some("json")) => OutputMode::Json,
        Some(Some("text")) => OutputMode::Text,
        Some(_) => {
            return Err(ContractError::action(
                "output_mode",
                "output_mode must be \"json\" (one JSON object on stdout) or \"text\" (exit 0 is success)",
            ))
        }
    };
    if !policy.allows_output_mode(mode.name()) {
        return Err(ContractError::InvalidRequest {
            what: "output_mode_denied".into(),
            message: format!(
                "this policy does not accept output_mode {:?} (languages.output_modes = {:?})",
                mode.name(),
                policy.languages.output_modes
            ),
        });
    }
    Ok(mode)
}

/// Longest input file path, and path component.
pub const MAX_FILE_PATH_BYTES: usize = 1024;
pub const MAX_FILE_NAME_BYTES: usize = 255;

/// Why an input file path is not acceptable: `path_absolute`, `path_traversal` (an empty,
/// `.` or `..` component), `path_control` (a control, bidi or invisible format character, or
/// a backslash), `path_too_long`; None when it is a relative, normalised path.
pub fn file_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("path_traversal");
    }
    if path.starts_with('/') {
        return Some("path_absolute");
    }
    if path
        .chars()
        .any(|c| c == '\\' || agentjail_json::needs_escape(c))
    {
        return Some("path_control");
    }
    if path.len() > MAX_FILE_PATH_BYTES || path.split('/').any(|c| c.len() > MAX_FILE_NAME_BYTES) {
        return Some("path_too_long");
    }
    if path
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Some("path_traversal");
    }
    None
}

/// Validate an action's `files`: a list of `{"path", "content"}` or `{"path",
/// "content_base64"}`, each path relative and normalised, no duplicate and no path that is
/// another's directory, within the policy's caps. `invalid_action:files:<what>` names the
/// rule; the message names the path (escaped).
pub fn parse_files(
    v: &Value,
    caps: &crate::policy::FilesPolicy,
) -> Result<Vec<InputFile>, ContractError> {
    let bad = |what: &str, message: String| ContractError::action(format!("files:{what}"), message);
    let Value::Array(items) = v else {
        return Err(bad(
            "not_a_list",
            "files must be a list of {\"path\", \"content\"} objects".into(),
        ));
    };
    if items.len() as u64 > caps.max_count {
        return Err(bad(
            "too_many",
            format!("{} files; the limit is {}", items.len(), caps.max_count),
        ));
    }
    let mut out: Vec<InputFile> = Vec::with_capacity(items.len());
    let mut total: u64 = 0;
    for (i, item) in items.iter().enumerate() {
        let f = parse_file(item, i)?;
        let shown = agentjail_json::safe_text(&f.path, 200);
        if f.contents.len() as u64 > caps.max_file_bytes.0 {
            return Err(bad(
                "too_large",
                format!(
                    "{shown} is {} bytes; the limit is {}",
                    f.contents.len(),
                    caps.max_file_bytes
                ),
            ));
        }
        total += f.contents.len() as u64;
        if total > caps.max_total_bytes.0 {
            return Err(bad(
                "total_too_large",
                format!("the files add up to more than {}", caps.max_total_bytes),
            ));
        }
        let clash = out.iter().find(|o| {
            o.path == f.path
                || f.path.starts_with(&format!("{}/", o.path))
                || o.path.starts_with(&format!("{}/", f.path))
        });
        if let Some(o) = clash {
            let what = if o.path == f.path {
                "duplicate"
            } else {
                "conflict"
            };
            return Err(bad(
                what,
                format!(
                    "{shown} clashes with {}",
                    agentjail_json::safe_text(&o.path, 200)
                ),
            ));
        }
        if let Some(o) = f.link.as_ref().and_then(|l| link_clash(&out, l)) {
            return Err(bad(
                "link_conflict",
                format!(
                    "{shown}'s link clashes with {}'s",
                    agentjail_json::safe_text(&o.path, 200)
                ),
            ));
        }
        out.push(f);
    }
    Ok(out)
}

/// The file already in `out` whose link is `link`, or a directory above it, or beneath it.
fn link_clash<'a>(out: &'a [InputFile], link: &str) -> Option<&'a InputFile> {
    out.iter().find(|o| {
        o.link.as_deref().is_some_and(|l| {
            l == link || link.starts_with(&format!("{l}/")) || l.starts_with(&format!("{link}/"))
        })
    })
}

/// An input file's `link`: absolute, beneath one of [`LINK_DIRS`] by a relative, normalised
/// path of printable characters; else `files:link`.
fn parse_link(v: Option<&Value>, i: usize) -> Result<Option<String>, ContractError> {
    let Some(v) = v else { return Ok(None) };
    let ok = v.as_str().filter(|l| {
        LINK_DIRS.iter().any(|d| {
            l.strip_prefix(d)
                .is_some_and(|rest| file_path_problem(rest).is_none())
        })
    });
    match ok {
        Some(l) => Ok(Some(l.to_string())),
        None => Err(ContractError::action(
            "files:link",
            format!(
                "files[{i}].link must be an absolute, normalised path of printable characters beneath {} (no `..`)",
                LINK_DIRS.join(" or ")
            ),
        )),
    }
}

fn parse_file(item: &Value, i: usize) -> Result<InputFile, ContractError> {
    use base64::Engine as _;
    let bad = |what: &str, message: String| ContractError::action(format!("files:{what}"), message);
    let Value::Object(o) = item else {
        return Err(bad(
            "entry",
            format!("files[{i}] must be an object with path and content"),
        ));
    };
    if let Some(k) = o
        .keys()
        .find(|k| !["path", "content", "content_base64", "link"].contains(&k.as_str()))
    {
        return Err(bad(
            "entry",
            format!("files[{i}] has an unknown field {:?}", sanitize_name(k)),
        ));
    }
    let Some(Value::String(path)) = o.get("path") else {
        return Err(bad("path", format!("files[{i}].path must be a string")));
    };
    if let Some(problem) = file_path_problem(path) {
        let shown = agentjail_json::safe_text(path, 200);
        return Err(bad(problem, format!("files[{i}].path {shown:?} must be a relative, normalised path of printable characters (no `..`, no leading `/`)")));
    }
    let contents = match (o.get("content"), o.get("content_base64")) {
        (Some(Value::String(text)), None) => text.as_bytes().to_vec(),
        (None, Some(Value::String(b64))) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| {
            bad(
                "base64",
                format!("files[{i}].content_base64 is not standard base64: {e}"),
            )
        })?,
        _ => {
            return Err(bad(
                "content",
                format!("files[{i}] needs exactly one of content (text) or content_base64"),
            ))
        }
    };
    Ok(InputFile {
        path: path.clone(),
        contents,
        link: parse_link(o.get("link"), i)?,
    })
}

/// `entrypoint_path` for a path separator; `entrypoint_denied` for a name that is not the
/// language's file (when the policy executes the language) or not one of [`ENTRYPOINTS`].
fn check_entrypoint(
    entrypoint: &str,
    language: &str,
    policy: &Policy,
) -> Result<(), ContractError> {
    let expected = entrypoint_for(language).filter(|_| policy.executes(language));
    let suggestion = expected.unwrap_or(ENTRYPOINT);
    if entrypoint.contains('/') || entrypoint.contains('\\') {
        return Err(ContractError::action(
            "entrypoint_path",
            format!("entrypoint {entrypoint:?} contains a path separator; use {suggestion:?}"),
        ));
    }
    let allowed = match expected {
        Some(e) => entrypoint == e,
        None => ENTRYPOINTS.contains(&entrypoint),
    };
    if !allowed {
        let why = match expected {
            Some(e) => format!("{language} runs from {e:?}"),
            None => format!("use one of {}", ENTRYPOINTS.join(", ")),
        };
        return Err(ContractError::action(
            "entrypoint_denied",
            format!("entrypoint {entrypoint:?} is not allowed; {why}"),
        ));
    }
    Ok(())
}

/// Field names in a reason are echoed back; keep them short and printable.
fn sanitize_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "?".to_string()
    } else {
        cleaned
    }
}

fn non_blank<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, ContractError> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::String(_)) => Err(ContractError::action(
            key,
            format!("{key} is blank; send a non-empty string"),
        )),
        Some(_) => Err(ContractError::action(
            key,
            format!("{key} must be a string"),
        )),
        None => Err(ContractError::action(
            key,
            format!("{key} is missing; it is required"),
        )),
    }
}

fn hint_error(message: impl Into<String>) -> ContractError {
    ContractError::action("policy_hints", message)
}

/// Parse a `policy_hints` object (an action's, or a session's).
pub fn parse_hints(v: &Value) -> Result<PolicyHints, ContractError> {
    let Value::Object(map) = v else {
        return Err(hint_error("policy_hints must be an object"));
    };
    let mut unknown: Vec<&String> = map
        .keys()
        .filter(|k| !KNOWN_HINTS.contains(&k.as_str()))
        .collect();
    unknown.sort();
    if let Some(name) = unknown.first() {
        return Err(hint_error(format!(
            "unknown policy hint {name:?}; allowed hints are {}",
            KNOWN_HINTS.join(", ")
        )));
    }
    Ok(PolicyHints {
        allowed_languages: hint_languages(map.get("allowed_languages"))?,
        max_code_chars: hint_code_chars(map.get("max_code_chars"))?,
        exec_timeout_seconds: hint_timeout(map.get("exec_timeout_seconds"), "exec")?,
        compile_timeout_seconds: hint_timeout(map.get("compile_timeout_seconds"), "compile")?,
        network_access: hint_network(map.get("network_access"))?,
    })
}

fn hint_languages(v: Option<&Value>) -> Result<Option<Vec<String>>, ContractError> {
    let items = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(hint_error(
                "policy_hints.allowed_languages must be an array of strings",
            ))
        }
    };
    let mut langs = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) if !s.trim().is_empty() => langs.push(s.trim().to_lowercase()),
            _ => {
                return Err(hint_error(
                    "policy_hints.allowed_languages must be non-empty strings",
                ))
            }
        }
    }
    Ok(Some(langs))
}

fn hint_code_chars(v: Option<&Value>) -> Result<Option<usize>, ContractError> {
    let bad = || hint_error("policy_hints.max_code_chars must be a non-negative integer");
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

fn hint_timeout(v: Option<&Value>, which: &str) -> Result<Option<f64>, ContractError> {
    let bad = || {
        hint_error(format!(
            "policy_hints.{which}_timeout_seconds must be a positive number"
        ))
    };
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(s) if s.is_finite() && s > 0.0 => Ok(Some(s)),
            _ => Err(bad()),
        },
        Some(_) => Err(bad()),
    }
}

/// Only "denied" (and its spellings) is accepted: agentjail never grants network access.
fn hint_network(v: Option<&Value>) -> Result<Option<String>, ContractError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let norm = s.trim().to_lowercase();
            if !NETWORK_DENIED_VALUES.contains(&norm.as_str()) {
                return Err(ContractError::InvalidRequest {
                    what: "network_access_must_be_denied".into(),
                    message: format!(
                        "policy_hints.network_access is {s:?}; agentjail never grants network access \
                         (send \"denied\" or leave it out)"
                    ),
                });
            }
            Ok(Some(norm))
        }
        Some(_) => Err(hint_error(
            "policy_hints.network_access must be a string such as \"denied\"",
        )),
    }
}

/// The output schema must compile under agentjail's bounded validator (a strict subset of
/// 2020-12, see `schema`): `invalid_action:output_schema:<why>` otherwise, e.g.
/// `too_complex`, `unknown_keyword:maxium`, `pattern`.
fn validate_schema(schema: Value) -> Result<Value, ContractError> {
    match agentjail_json::schema::compile(&schema, &agentjail_json::schema::SchemaLimits::default())
    {
        Ok(_) => Ok(schema),
        Err(e) => Err(ContractError::action(
            format!("output_schema:{}", e.what()),
            format!("output_schema is refused: {e}"),
        )),
    }
}

/// Decide whether `action` may run under `policy`: its language, then the static check
/// ([`agentjail_check`]) for the action's output mode (the `input()` rule is the JSON
/// contract's). Apply the action's hints to the policy first ([`apply_hints`]) so a
/// tightened language list counts.
pub fn check_action(action: &Action, policy: &Policy) -> agentjail_check::Decision {
    let languages = agentjail_check::Languages {
        allowed: &policy.languages.allowed,
        execute: &policy.languages.execute,
    };
    agentjail_check::check_code(
        &action.language,
        &action.code,
        languages,
        &policy.check,
        policy.python_version(),
        match action.output_mode {
            OutputMode::Json => agentjail_check::OutputMode::Json,
            OutputMode::Text => agentjail_check::OutputMode::Text,
        },
    )
}

/// Apply an action's hints to a policy. Hints may only tighten:
///
/// * `allowed_languages`: the intersection with the policy's languages;
/// * `max_code_chars`: the smaller of the two;
/// * `exec_timeout_seconds`: the smaller of it and `limits.wall_time_ms`;
/// * `compile_timeout_seconds`: the smaller of it and each compiled language's
///   `compile_limits.wall_time_ms` (never a note: it caps, as /run_code's `compile_timeout`);
/// * `network_access`: already forced to a "denied" value by [`parse_action`].
///
/// A hint that would loosen the policy is ignored and reported in the returned notes.
pub fn apply_hints(policy: &Policy, hints: &PolicyHints) -> (Policy, Vec<HintNote>) {
    let mut out = policy.clone();
    let mut notes = Vec::new();
    let ignored = "ignored: would loosen".to_string();

    if let Some(requested) = &hints.allowed_languages {
        let policy_langs: Vec<String> = policy
            .languages
            .allowed
            .iter()
            .map(|l| l.trim().to_lowercase())
            .collect();
        let mut kept: Vec<String> = Vec::new();
        for lang in requested {
            if policy_langs.contains(lang) {
                if !kept.contains(lang) {
                    kept.push(lang.clone());
                }
            } else {
                notes.push(HintNote {
                    hint: "allowed_languages".into(),
                    requested: Value::String(lang.clone()),
                    effective: Value::Null,
                    note: ignored.clone(),
                });
            }
        }
        out.languages.allowed = kept;
    }

    if let Some(requested) = hints.max_code_chars {
        if requested <= policy.budget.max_code_chars {
            out.budget.max_code_chars = requested;
        } else {
            notes.push(HintNote {
                hint: "max_code_chars".into(),
                requested: Value::from(requested),
                effective: Value::from(policy.budget.max_code_chars),
                note: ignored.clone(),
            });
        }
    }

    if let Some(secs) = hints.exec_timeout_seconds {
        // Round down so the hint never grants a millisecond more than asked; keep >= 1 ms.
        let ms = if secs.is_finite() && secs > 0.0 {
            ((secs * 1000.0).floor() as u64).max(1)
        } else {
            u64::MAX
        };
        if ms <= policy.limits.wall_time_ms {
            out.limits.wall_time_ms = ms;
        } else {
            notes.push(HintNote {
                hint: "exec_timeout_seconds".into(),
                requested: serde_json::Number::from_f64(secs)
                    .map(Value::Number)
                    .unwrap_or(Value::Null),
                effective: serde_json::Number::from_f64(policy.limits.wall_time_ms as f64 / 1000.0)
                    .map(Value::Number)
                    .unwrap_or(Value::Null),
                note: ignored,
            });
        }
    }
    if let Some(secs) = hints.compile_timeout_seconds {
        cap_compiles(&mut out, secs);
    }
    (out, notes)
}

/// Each compiled language's compile wall time, capped at `secs` (rounded down, >= 1 ms).
fn cap_compiles(policy: &mut Policy, secs: f64) {
    if !(secs.is_finite() && secs > 0.0) {
        return;
    }
    let ms = ((secs * 1000.0).floor() as u64).max(1);
    for lang in crate::policy::toolchain::TOOLCHAIN_LANGUAGES {
        if let Some(tc) = policy.languages.toolchain_mut(lang) {
            let wall = &mut tc.compile_limits.wall_time_ms;
            *wall = (*wall).min(ms);
        }
    }
}
