//! `agentjail explain RECORD`: for a stopped record, the policy edit that would let the
//! action through, what that edit exposes, and the safer way when there is one.
//!
//! Pure: a record (JSON) and the policy it ran under in, [`Explanation`] out. Each proposed
//! [`Edit`] is tried on a copy of the policy: the loader's own rules
//! (`validate::validate`) decide whether any policy may hold it (a refusal is reported
//! with the loader's words, never proposed), and `policy lint` on the edited copy names
//! what it newly warns about (the risk). Limits are raised to twice what the run hit — a
//! stated rule, not a measurement of the need: a run that stops again gets explained again.
//! The stop reasons no policy key changes (the program's own error, invalid output, a syntax
//! error, a host that lacks a control) say so and what to do instead.

use super::{lint, Policy};
use serde::Serialize;
use serde_json::{json, Value};

/// One key's change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Add these items to the list.
    Add(Vec<String>),
    /// Remove these items from the list.
    Remove(Vec<String>),
    /// Set the key to this value (a number, or a byte size as the policy writes one).
    Set(Value),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Edit {
    /// The dotted key (`limits.memory`, `check.allowed_imports`).
    pub key: String,
    #[serde(flatten)]
    pub op: Op,
}

/// What `explain` says about one record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub stop_reason: String,
    /// The edits that, applied together, let this action through; empty when none can.
    pub edits: Vec<Edit>,
    /// What the edits expose: `policy lint`'s new warnings on the edited policy, and the
    /// edit's own risk.
    pub risks: Vec<String>,
    /// A safer way to the same result, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternative: Option<String>,
    /// Why no edit is proposed (the program's own fault, or the loader refuses the edit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_edit: Option<String>,
}

/// Explain `record`, which ran under `policy`.
pub fn explain(record: &Value, policy: &Policy) -> Explanation {
    let reason = record["stop_reason"].as_str().unwrap_or("").to_string();
    let (edits, risk, alternative, no_edit) = propose(&reason, record, policy);
    let mut e = Explanation {
        stop_reason: reason,
        edits,
        risks: risk.into_iter().map(str::to_string).collect(),
        alternative,
        no_edit,
    };
    if e.edits.is_empty() {
        return e;
    }
    match edited(policy, &e.edits) {
        Err(why) => {
            e.no_edit = Some(format!(
                "no policy may hold that edit: the loader refuses it ({why})"
            ));
            e.edits.clear();
        }
        Ok(new) => {
            let before: Vec<(String, String)> = lint(policy)
                .into_iter()
                .map(|w| (w.key, w.message))
                .collect();
            for w in lint(&new) {
                if !before.contains(&(w.key.clone(), w.message.clone())) {
                    e.risks.push(format!("{}: {}", w.key, w.message));
                }
            }
        }
    }
    e
}

/// The short hint a front end puts beside a stopped record for a model (MCP's tool result,
/// HTTP's answer: `hint`): `{"text", "edits", "alternative"?}`, the text one line naming the
/// edit the server's operator would make, what it exposes, and the safer way when there is
/// one. None for a record that is not stopped and for a stop no policy key lifts (the
/// program's own error, invalid output, a syntax error or another rule no policy may lift,
/// a host that lacks a control, an edit the loader refuses): a model is never pointed at
/// what no policy may hold.
pub fn hint(record: &Value, policy: &Policy) -> Option<Value> {
    if record["status"] != "stopped" {
        return None;
    }
    let e = explain(record, policy);
    if e.edits.is_empty() {
        return None;
    }
    let edits: Vec<String> = e.edits.iter().map(describe).collect();
    let mut text = format!(
        "stopped by this server's policy; its operator could allow it with {}",
        edits.join(", ")
    );
    if let Some(r) = e.risks.first() {
        text.push_str(&format!(" (which exposes: {r})"));
    }
    match &e.alternative {
        Some(a) => text.push_str(&format!("; safer: {a}")),
        None => text.push_str("; or change the program to do without it"),
    }
    let mut h = json!({"text": text, "edits": e.edits});
    if let Some(a) = e.alternative {
        h["alternative"] = json!(a);
    }
    Some(h)
}

/// `record` with its [`hint`] under `hint`, where it has one (a front end's copy of the
/// record: the audit log's is sealed before).
pub fn add_hint(record: &mut Value, policy: &Policy) {
    if let Some(h) = hint(record, policy) {
        record["hint"] = h;
    }
}

/// One edit as a person writes it: `key += "a", "b"`, `key -= "a"`, `key = V`.
pub fn describe(e: &Edit) -> String {
    let quoted = |v: &[String]| {
        v.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &e.op {
        Op::Add(v) => format!("{} += {}", e.key, quoted(v)),
        Op::Remove(v) => format!("{} -= {}", e.key, quoted(v)),
        Op::Set(v) => format!("{} = {v}", e.key),
    }
}

type Proposal = (
    Vec<Edit>,
    Option<&'static str>,
    Option<String>,
    Option<String>,
);

// long because it is the table of stop reasons, one arm each: split, it would hide which
// reasons have an edit.
fn propose(reason: &str, record: &Value, p: &Policy) -> Proposal {
    let (kind, suffix) = reason.split_once(':').unwrap_or((reason, ""));
    let none = |why: &str| (Vec::new(), None, None, Some(why.to_string()));
    let raise = |key: &str, now: u64, bytes: bool, risk: &'static str| {
        let v = if bytes {
            Value::String(super::Bytes(now.saturating_mul(2)).to_string())
        } else {
            json!(now.saturating_mul(2))
        };
        let mut edits = vec![set(key, v)];
        // The run's whole budget must still cover a longer wall time (the loader's rule).
        if key == "limits.wall_time_ms" {
            let need = (now * 2).div_ceil(1000) + 5;
            if p.budget.max_seconds < need {
                edits.push(set("budget.max_seconds", json!(need)));
            }
        }
        (edits, Some(risk), None, None)
    };
    match (kind, suffix) {
        ("success", _) | ("", _) => none("the record is not stopped: nothing to explain"),
        ("policy_block", "language_denied_policy") => lang(record, "languages.allowed"),
        ("policy_block", "language_denied_execution") => lang(record, "languages.execute"),
        ("policy_block", _) => check(record, p),
        ("invalid_request", "output_mode_denied") => (
            vec![add("languages.output_modes", &["text", "json"], &p.languages.output_modes)],
            Some("an output mode the policy's users did not expect"),
            None,
            None,
        ),
        ("invalid_action", "code_too_long") => raise(
            "budget.max_code_chars",
            p.budget.max_code_chars as u64,
            false,
            "longer programs: more for the check to parse, more for a reviewer",
        ),
        ("invalid_action", "payload_too_large") => raise(
            "budget.max_payload_bytes",
            p.budget.max_payload_bytes.0,
            true,
            "larger inputs held in memory before the jail",
        ),
        ("code_timeout", _) => raise(
            "limits.wall_time_ms",
            p.limits.wall_time_ms,
            false,
            "a job holds its slot longer: fewer jobs a second",
        ),
        ("code_cpu_limit", _) => raise(
            "limits.cpu_time_ms",
            p.limits.cpu_time_ms,
            false,
            "more CPU a job: a loop burns more before it stops",
        ),
        ("code_memory_limit", _) => raise(
            "limits.memory",
            p.limits.memory.0,
            true,
            "more memory a job: fewer jobs fit on the host",
        ),
        ("code_pids_limit", _) => raise(
            "limits.pids",
            p.limits.pids,
            false,
            "more processes a job: a fork bomb reaches further before it stops",
        ),
        ("code_output_too_large", _) => raise(
            "limits.stdout",
            p.limits.stdout.0,
            true,
            "larger records: more for every reader of the output",
        ),
        ("code_stderr_too_large", _) => raise(
            "limits.stderr",
            p.limits.stderr.0,
            true,
            "larger records: more for every reader of the output",
        ),
        ("max_seconds", _) => raise(
            "budget.max_seconds",
            p.budget.max_seconds,
            false,
            "a run holds its slot longer",
        ),
        ("compile_timeout", _) | ("compile_memory_limit", _) => match compile_limit(kind, record, p) {
            Ok((key, now, bytes, risk)) => raise(&key, now, bytes, risk),
            Err(why) => none(&why),
        },
        ("compile_error", _) => none(
            "the compiler refused the program or failed on its own (its message in `compile.stderr`): fix the program; no policy key is involved",
        ),
        ("code_forbidden_syscall", name) => syscall(name, p),
        ("code_network_denied", host) => denied_host(host, record, p),
        ("code_runtime_error", _) | ("code_killed", _) => none(
            "the program failed on its own (its exit code or signal, `error` in the record): fix the program; no policy key is involved",
        ),
        ("invalid_code_output", _) => none(
            "the program ran; what it printed does not match the output schema: fix the program or the schema",
        ),
        ("sandbox_unavailable", control) => none(&format!(
            "this host cannot enforce `{control}`, which the policy requires: `agentjail doctor` names the host's fix (a policy that takes it best effort runs without it: weaker)"
        )),
        _ => none("no policy key is behind this stop reason"),
    }
}

/// A compile step stopped by its own limit (`[languages.<lang>.compile_limits]`): the key of
/// the limit the compile jail's stop names (`compile.stopped_by`: `code_cpu_limit` is the
/// CPU's, a wall-clock stop the wall's), its value, whether it is a size, and the risk; the
/// table's `raise` doubles it as it doubles the run's limits.
fn compile_limit(
    kind: &str,
    record: &Value,
    p: &Policy,
) -> Result<(String, u64, bool, &'static str), String> {
    let lang = record["action"]["language"].as_str().unwrap_or("");
    let Some(tc) = p.languages.toolchain(lang) else {
        return Err(format!(
            "the policy has no [languages.{lang}] table: this record is not from this policy"
        ));
    };
    let l = &tc.compile_limits;
    let key = |k: &str| format!("languages.{lang}.compile_limits.{k}");
    Ok(if kind == "compile_memory_limit" {
        (
            key("memory"),
            l.memory.0,
            true,
            "more memory a compile: a template or constexpr bomb holds more of the host before it stops",
        )
    } else if record["compile"]["stopped_by"] == "code_cpu_limit" {
        (
            key("cpu_time_ms"),
            l.cpu_time_ms,
            false,
            "more CPU a compile: a compiler bomb burns more before it stops",
        )
    } else {
        (
            key("wall_time_ms"),
            l.wall_time_ms,
            false,
            "a compile holds its slot longer: fewer jobs a second",
        )
    })
}

/// `code_network_denied:<host>`: the record's first denied request for that host (its port,
/// method and the proxy's reason) through [`network_edits`].
fn denied_host(host: &str, record: &Value, p: &Policy) -> Proposal {
    let none = Vec::new();
    let denied = record["network"]["requests"]
        .as_array()
        .unwrap_or(&none)
        .iter()
        .find(|r| r["allowed"] == false && r["host"] == host);
    let Some((target, edits)) = denied.and_then(network_edits) else {
        return (
            Vec::new(),
            None,
            None,
            Some(format!(
                "the record's network.requests has no denied request for `{host}` (its port): nothing to add"
            )),
        );
    };
    match edits {
        // Only what the policy lacks: a second round (the host listed, its loopback address
        // still refused as not public) adds the range alone.
        Ok(edits) => (
            edits.iter().filter_map(|e| lacking(p, e)).collect(),
            Some("the program reaches that host, and anything it serves"),
            None,
            None,
        ),
        Err(reason) => (
            Vec::new(),
            None,
            None,
            Some(format!(
                "the proxy denied {target} for `{reason}`, which no allowlist entry lifts"
            )),
        ),
    }
}

/// A denied request of the proxy's log (a record's `network.requests` entry) → its
/// `host:port` and the edits that admit it: `network.allow` + the target, the address's own
/// range in `network.allow_private` when the proxy refused it as not public, `allow_http`
/// for a request that was not a CONNECT tunnel, `network.mode = "allowlist"`; Err(reason)
/// for a denial no allowlist entry lifts (request_limit, resolve_failed, a malformed head).
/// None: the entry names no host or port.
pub(super) fn network_edits(r: &Value) -> Option<(String, Result<Vec<Edit>, String>)> {
    let host = r["host"].as_str().filter(|h| !h.is_empty())?;
    let port = r["port"].as_u64()?;
    let method = r["method"].as_str().unwrap_or("?");
    let reason = r["reason"].as_str().unwrap_or("");
    let target = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut edits = vec![Edit {
        key: "network.allow".into(),
        op: Op::Add(vec![target.clone()]),
    }];
    if let Some(rest) = reason.strip_prefix("non_public_address:") {
        // `ADDRESS:CLASS`: the address is everything before the last colon.
        let ip = rest.rsplit_once(':').map_or(rest, |(a, _)| a);
        let cidr = if ip.contains(':') {
            format!("{ip}/128")
        } else {
            format!("{ip}/32")
        };
        edits.push(Edit {
            key: "network.allow_private".into(),
            op: Op::Add(vec![cidr]),
        });
    } else if !matches!(
        reason,
        "not_allowlisted" | "ip_not_listed" | "plain_http_denied"
    ) && !reason.is_empty()
    {
        return Some((target, Err(reason.to_string())));
    }
    if method != "CONNECT" && method != "?" {
        edits.push(set("network.allow_http", json!(true)));
    }
    edits.push(set("network.mode", json!("allowlist")));
    Some((target, Ok(edits)))
}

/// The part of `e` the candidate does not hold yet (None: nothing to do).
pub(super) fn lacking(p: &Policy, e: &Edit) -> Option<Edit> {
    let now = current(p, &e.key);
    let op = match &e.op {
        Op::Set(v) => (now != *v).then(|| Op::Set(v.clone()))?,
        Op::Add(items) => {
            let have = now.as_array().cloned().unwrap_or_default();
            let new: Vec<String> = items
                .iter()
                .filter(|i| !have.iter().any(|h| h == *i))
                .cloned()
                .collect();
            (!new.is_empty()).then_some(Op::Add(new))?
        }
        Op::Remove(items) => {
            let have = now.as_array().cloned().unwrap_or_default();
            let gone: Vec<String> = items
                .iter()
                .filter(|i| have.iter().any(|h| h == *i))
                .cloned()
                .collect();
            (!gone.is_empty()).then_some(Op::Remove(gone))?
        }
    };
    Some(Edit {
        key: e.key.clone(),
        op,
    })
}

/// A key's value in `p`, as JSON (dotted key).
pub(super) fn current(p: &Policy, key: &str) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or_default();
    for part in key.split('.') {
        v = v.get(part).cloned().unwrap_or(Value::Null);
    }
    v
}

fn set(key: &str, v: Value) -> Edit {
    Edit {
        key: key.to_string(),
        op: Op::Set(v),
    }
}

/// Add what `have` lacks of `items`.
fn add(key: &str, items: &[&str], have: &[String]) -> Edit {
    let new: Vec<String> = items
        .iter()
        .filter(|i| !have.iter().any(|h| h == *i))
        .map(|i| (*i).to_string())
        .collect();
    Edit {
        key: key.to_string(),
        op: Op::Add(new),
    }
}

fn lang(record: &Value, key: &str) -> Proposal {
    let l = record["action"]["language"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (
        vec![Edit {
            key: key.to_string(),
            op: Op::Add(vec![l]),
        }],
        Some("another language's runtime in the jail, and its check"),
        None,
        None,
    )
}

/// The static check's findings: one edit per kind of rule.
fn check(record: &Value, p: &Policy) -> Proposal {
    let mut edits: Vec<Edit> = Vec::new();
    let mut alternative = None;
    let none = Vec::new();
    let violations = record["decision"]["violations"].as_array().unwrap_or(&none);
    for v in violations {
        let rule = v["rule"].as_str().unwrap_or("");
        let (kind, what) = rule.split_once(':').unwrap_or((rule, ""));
        match kind {
            "import_not_allowed" | "import_star_not_allowed" => {
                if matches!(what, "pickle" | "marshal" | "shelve") {
                    alternative = Some(format!(
                        "`json` instead of `{what}`: loading {what} data runs code"
                    ));
                }
                push(&mut edits, "check.allowed_imports", what, false);
                if kind == "import_star_not_allowed" && !p.check.allow_star_imports {
                    edits.push(set("check.allow_star_imports", json!(true)));
                }
            }
            "call_not_allowed" if p.check.denied_calls.iter().any(|c| c == what) => {
                push(&mut edits, "check.denied_calls", what, true)
            }
            "name_not_allowed" if p.check.denied_names.iter().any(|c| c == what) => {
                push(&mut edits, "check.denied_names", what, true)
            }
            "attr_not_allowed" if p.check.denied_attributes.iter().any(|c| c == what) => {
                push(&mut edits, "check.denied_attributes", what, true)
            }
            "too_many_input_reads" => edits.push(set(
                "check.max_input_reads",
                json!(p.check.max_input_reads.saturating_mul(2).max(2)),
            )),
            _ => {
                return (
                    Vec::new(),
                    None,
                    alternative,
                    Some(format!(
                        "`{rule}` is not a policy's to lift (a syntax error, an always-denied name, a dunder or module side door): change the program; `check.enforce = false` turns the whole check off, and only under the jail's full controls"
                    )),
                )
            }
        }
    }
    (
        edits,
        Some("the program may use what the check refused"),
        alternative,
        None,
    )
}

/// Add `item` to the list edit of `key` (made, adding or removing, when first needed).
fn push(edits: &mut Vec<Edit>, key: &str, item: &str, remove: bool) {
    let at = match edits.iter().position(|e| e.key == key) {
        Some(i) => i,
        None => {
            edits.push(Edit {
                key: key.to_string(),
                op: if remove {
                    Op::Remove(Vec::new())
                } else {
                    Op::Add(Vec::new())
                },
            });
            edits.len() - 1
        }
    };
    if let Op::Add(v) | Op::Remove(v) = &mut edits[at].op {
        if !v.iter().any(|x| x == item) {
            v.push(item.to_string());
        }
    }
}

/// A syscall outside the allowlist: the group that holds it.
fn syscall(name: &str, p: &Policy) -> Proposal {
    // The first group holding it that the policy lacks: a syscall of a group it has was
    // refused for its arguments (`clone` without thread flags is `process_spawn`'s).
    let group = agentjail_jail::syscall_groups::groups()
        .iter()
        .find(|(g, calls)| calls.contains(&name) && !p.seccomp.allow_groups.iter().any(|a| a == g))
        .map(|(g, _)| *g);
    match group {
        Some(g) => (
            vec![add("seccomp.allow_groups", &[g], &p.seccomp.allow_groups)],
            Some("every syscall of that group, not only this one"),
            None,
            None,
        ),
        None => (
            Vec::new(),
            None,
            None,
            Some(format!(
                "`{name}` is in no group a policy may allow: the jail refuses it under every policy"
            )),
        ),
    }
}

/// `policy` with `edits` applied, if the loader's rules accept it.
pub(super) fn edited(policy: &Policy, edits: &[Edit]) -> Result<Policy, String> {
    let mut v = serde_json::to_value(policy).map_err(|e| e.to_string())?;
    for e in edits {
        apply(&mut v, e)?;
    }
    let mut new: Policy = serde_json::from_value(v).map_err(|e| e.to_string())?;
    // What serialisation skips (found at load, never written): carried over.
    new.interpreter.found = policy.interpreter.found.clone();
    new.network.broker = policy.network.broker.clone();
    new.redaction.secrets = policy.redaction.secrets.clone();
    super::validate::validate(&new).map_err(|i| format!("{}: {}", i.key, i.message))?;
    Ok(new)
}

/// Apply one edit to a policy as JSON (the same dotted keys as TOML).
fn apply(v: &mut Value, e: &Edit) -> Result<(), String> {
    let mut at = v;
    for part in e.key.split('.') {
        at = at
            .as_object_mut()
            .ok_or_else(|| format!("{}: not a table", e.key))?
            .entry(part)
            .or_insert(Value::Null);
    }
    match &e.op {
        Op::Set(x) => *at = x.clone(),
        Op::Add(items) => {
            if at.is_null() {
                *at = json!([]);
            }
            let list = at
                .as_array_mut()
                .ok_or_else(|| format!("{}: not a list", e.key))?;
            for i in items {
                if !list.iter().any(|x| x == i) {
                    list.push(Value::String(i.clone()));
                }
            }
        }
        Op::Remove(items) => {
            let list = at
                .as_array_mut()
                .ok_or_else(|| format!("{}: not a list", e.key))?;
            list.retain(|x| !items.iter().any(|i| x == i));
        }
    }
    Ok(())
}

/// The explanation for people.
pub fn render(e: &Explanation) -> String {
    let mut out = format!("stop_reason: {}\n", e.stop_reason);
    for ed in &e.edits {
        let what = match &ed.op {
            Op::Add(items) => format!("add {}", items.join(", ")),
            Op::Remove(items) => format!("remove {}", items.join(", ")),
            Op::Set(v) => format!("set to {v}"),
        };
        out.push_str(&format!("edit: {}: {what}\n", ed.key));
    }
    for r in &e.risks {
        out.push_str(&format!("risk: {r}\n"));
    }
    if let Some(a) = &e.alternative {
        out.push_str(&format!("safer: {a}\n"));
    }
    if let Some(n) = &e.no_edit {
        out.push_str(&format!("no edit: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(reason: &str, rule: &str) -> Value {
        json!({"status": "stopped", "stop_reason": reason,
               "decision": {"violations": [{"rule": rule, "line": 1, "column": 8}]}})
    }

    #[test]
    fn a_hint_names_the_key_only_where_a_policy_can_lift_the_stop() {
        let p = Policy::default();
        let h = hint(
            &stopped(
                "policy_block:static_policy_violation:import_not_allowed:pickle",
                "import_not_allowed:pickle",
            ),
            &p,
        )
        .expect("a hint");
        let text = h["text"].as_str().unwrap();
        assert!(
            text.contains("check.allowed_imports += \"pickle\""),
            "{text}"
        );
        assert!(text.contains("safer: `json` instead of `pickle`"), "{text}");
        assert_eq!(h["edits"][0]["key"], "check.allowed_imports");
        for none in [
            stopped(
                "policy_block:static_policy_violation:syntax_error",
                "syntax_error",
            ),
            json!({"status": "stopped", "stop_reason": "code_runtime_error:1"}),
            json!({"status": "stopped", "stop_reason": "invalid_code_output:not_object"}),
            json!({"status": "stopped", "stop_reason": "sandbox_unavailable:landlock"}),
            json!({"status": "stopped", "stop_reason": "code_forbidden_syscall:chroot"}),
            json!({"status": "ok", "stop_reason": "success"}),
        ] {
            assert_eq!(hint(&none, &p), None, "{none}");
        }
    }
}
