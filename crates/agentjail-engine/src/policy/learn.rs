//! `agentjail learn ACTION… [--base POLICY] [-o NEW.toml]`: the smallest policy that lets
//! exactly these actions run, written as the base plus a commented diff.
//!
//! # How
//! 1. **Observe** (rounds, at most [`MAX_ROUNDS`]): each action runs through the whole
//!    pipeline under the candidate policy (the base at first) with the jail's full
//!    isolation, but in observe mode:
//!    - the static check reports and refuses nothing (`check.enforce = false`): its findings
//!      (rule, line, column) are the evidence;
//!    - a syscall outside the allowlist is answered by the supervisor with `ENOSYS` through
//!      the seccomp listener (`SECCOMP_RET_USER_NOTIF`, never run, never program-controlled)
//!      and its name noted (`execution.observed_syscalls`) instead of stopping the run;
//!    - the network proxy runs even where the candidate has no network, with the
//!      candidate's allowlist (empty: it denies everything) and `deny_is_stop = false`: it
//!      records every host and port asked for;
//!    - every limit, mount, landlock rule and namespace is the candidate's.
//!
//!    What a run asked for becomes edits through `explain`'s table (the key that would lift
//!    a finding, a syscall's group, a stop's raised limit); the network edits come from
//!    the proxy's log (the host and port asked for, plain HTTP, a private address). Each
//!    edit is tried on the candidate with the loader's own rules (`explain::edited`): one
//!    the loader refuses is a need not met, never applied. A round that changes nothing
//!    ends the observation (a widening lets an action go further, so it may ask for more).
//! 2. **Limits** from the measured peaks: [`limit_rule`].
//! 3. **Verify**: each action runs again, enforced, under the learned policy.
//! 4. **Minimise**: each widened item is taken out in turn and the actions that asked for it
//!    run again, enforced; an item without which they all still succeed is dropped (and
//!    reported as observed but not needed). So no widened item stays that no action needs.
//!
//! The learned text is loaded back through the loader before it is handed out. Learning
//! runs are ordinary cold runs: their jails, cgroups and proxies end with them, they use no
//! cache and write no audit log.

use super::explain::{self, Edit, Op};
use super::{Bytes, LoadedPolicy, Policy, PolicyError};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Most observe rounds: each lets the actions go as far as the last round's widenings allow.
pub const MAX_ROUNDS: usize = 6;

/// The stated rule for the limits, as written into the learned file.
pub fn limit_rule() -> &'static str {
    "each of limits.wall_time_ms, limits.cpu_time_ms, limits.memory, limits.stdout and \
     limits.stderr becomes twice the highest peak any learning run measured, rounded up \
     (100 ms; 1 MiB; 1 KiB), at least 1000 ms, 64 MiB or 1 KiB, and never above the base's \
     value, unless an action was stopped by that limit: then it is raised to twice the limit \
     it hit (explain's rule) and kept. limits.pids, limits.tmp_size and the rest keep the \
     base's values (no peak is measured for them)"
}

/// One action to learn from: a name for the evidence (its `id`) and its bytes.
#[derive(Debug, Clone)]
pub struct LearnAction {
    pub id: String,
    pub raw: Vec<u8>,
}

impl LearnAction {
    /// `raw` named by its `id` field, or `fallback` (the file name) when it has none.
    pub fn new(raw: Vec<u8>, fallback: &str) -> LearnAction {
        let id = serde_json::from_slice::<Value>(&raw)
            .ok()
            .and_then(|v| v["id"].as_str().map(str::to_string))
            .unwrap_or_else(|| fallback.to_string());
        LearnAction { id, raw }
    }
}

/// One widened item: a list item added or removed, or a key set, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Widening {
    #[serde(flatten)]
    pub edit: Edit,
    /// Which action asked, and how: `action ID: line L, column C: RULE`, `action ID:
    /// syscall NAME (group G)`, `action ID: asked for HOST:PORT (METHOD)`, a stop.
    pub evidence: Vec<String>,
    /// What the widening exposes (`policy diff`'s sentence for the key; explain's risk).
    pub exposes: String,
    /// Action ids that asked for it (the minimisation re-runs these).
    #[serde(skip)]
    actions: Vec<String>,
}

/// A need no policy may hold (the loader refuses it), or that no key is behind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unmet {
    pub need: String,
    pub evidence: String,
    pub why: String,
}

/// A limit set from the measured peaks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitSet {
    pub key: String,
    pub base: Value,
    pub learned: Value,
    pub peak: u64,
}

/// How an action ended under the learned policy, enforced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionEnd {
    pub action: String,
    pub status: String,
    pub stop_reason: String,
}

/// What `learn` found and wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Learned {
    #[serde(skip)]
    pub policy: Policy,
    pub widened: Vec<Widening>,
    /// Asked for in observe mode, yet every action that asked succeeds without it.
    pub not_needed: Vec<Widening>,
    pub unmet: Vec<Unmet>,
    pub limits: Vec<LimitSet>,
    pub limit_rule: &'static str,
    /// When an observed open becomes a bind ([`open_rule`]).
    pub open_rule: &'static str,
    /// Actions that opened more distinct paths their jail lacked than an observed run notes
    /// (the record's `observed_opens.truncated`): the rest were not read, so not learned.
    pub opens_truncated: Vec<String>,
    pub actions: Vec<ActionEnd>,
    pub rounds: usize,
    /// Observe rounds ended at [`MAX_ROUNDS`] with actions still asking for more.
    pub rounds_exhausted: bool,
    pub runs: usize,
}

impl Learned {
    /// Every action succeeds under the learned policy and every need was met.
    pub fn complete(&self) -> bool {
        self.unmet.is_empty() && self.actions.iter().all(|a| a.status == "ok")
    }
}

/// The learned text did not load back (a bug of this module, reported, never written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnError(pub PolicyError);

impl std::fmt::Display for LearnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the learned policy does not load: {}", self.0)
    }
}

impl std::error::Error for LearnError {}

/// A group of edits that stand or fall together (the network's: an allowlist needs a host)
/// with one line of evidence, from one action.
struct Need {
    edits: Vec<Edit>,
    evidence: String,
    action: String,
    risk: String,
}

/// One run of an action through the whole pipeline under a policy: its record. The front
/// end passes the pipeline's cold run (this layer does not name the pipeline).
pub type Runner<'r> = dyn FnMut(&LoadedPolicy, &[u8]) -> Value + 'r;

struct Learner<'a, 'r> {
    base: &'a LoadedPolicy,
    runner: &'a mut Runner<'r>,
    cand: Policy,
    widened: Vec<Widening>,
    unmet: Vec<Unmet>,
    peaks: [u64; 5],
    stopped_by: Vec<&'static str>,
    runs: usize,
}

/// The limits the peaks decide, with the record field that measures each.
const LIMITS: [(&str, &str); 5] = [
    ("limits.wall_time_ms", "wall_ms"),
    ("limits.cpu_time_ms", "cpu_ms"),
    ("limits.memory", "peak_memory_bytes"),
    ("limits.stdout", "stdout_bytes"),
    ("limits.stderr", "stderr_bytes"),
];

/// Learn the smallest policy over `base` that lets `actions` run, each run by `runner`.
pub fn learn(
    base: &LoadedPolicy,
    actions: &[LearnAction],
    runner: &mut Runner<'_>,
) -> Result<(Learned, String), LearnError> {
    let mut l = Learner {
        base,
        runner,
        cand: base.policy.clone(),
        widened: Vec::new(),
        unmet: Vec::new(),
        peaks: [0; 5],
        stopped_by: Vec::new(),
        runs: 0,
    };
    let (rounds, exhausted, opens_truncated) = l.observe(actions);
    let limits = l.set_limits();
    let mut ends = l.verify(actions);
    let ok: Vec<String> = ends
        .iter()
        .filter(|e| e.status == "ok")
        .map(|e| e.action.clone())
        .collect();
    let not_needed = l.minimise(actions, &ok);
    if !not_needed.is_empty() {
        ends = l.verify(actions);
    }
    let learned = Learned {
        policy: l.cand,
        widened: l.widened,
        not_needed,
        unmet: l.unmet,
        limits,
        limit_rule: limit_rule(),
        open_rule: open_rule(),
        opens_truncated,
        actions: ends,
        rounds,
        rounds_exhausted: exhausted,
        runs: l.runs,
    };
    let text = render(base, &learned);
    let back = super::load_str(&text, "the learned policy").map_err(LearnError)?;
    let as_json = |p: &Policy| serde_json::to_value(p).unwrap_or_default();
    if as_json(&back.policy) != as_json(&learned.policy) {
        let (a, b) = (as_json(&back.policy), as_json(&learned.policy));
        let differs: Vec<&String> = b
            .as_object()
            .map(|o| {
                o.keys()
                    .filter(|k| a.get(k.as_str()) != o.get(k.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        return Err(LearnError(PolicyError {
            origin: "the learned policy".into(),
            position: None,
            key: None,
            message: format!(
                "loads as a different policy than the one learned (tables {differs:?})",
            ),
            hint: "a bug of agentjail learn: report it".into(),
        }));
    }
    Ok((learned, text))
}

/// `explain`'s edit under the loader's rules, then what the loader settles itself: the
/// check's network attributes follow `[network]` (`Policy::settle_network_attributes`).
fn edited(p: &Policy, edits: &[Edit]) -> Result<Policy, String> {
    let mut new = explain::edited(p, edits)?;
    new.settle_network_attributes();
    Ok(new)
}

/// The candidate in observe mode (see the module's doc).
fn observing(cand: &Policy) -> Policy {
    let mut p = cand.clone();
    p.check.enforce = false;
    p.seccomp.observe = true;
    if !p.network.enabled {
        p.network.mode = super::NetworkMode::Allowlist;
        p.network.deny_is_stop = false;
    }
    p
}

impl Learner<'_, '_> {
    /// The observe rounds (see the module's doc): (rounds, whether the actions still asked
    /// for more after [`MAX_ROUNDS`], the actions whose opens overflowed the record's list).
    fn observe(&mut self, actions: &[LearnAction]) -> (usize, bool, Vec<String>) {
        let mut rounds = 0;
        let mut opens_truncated = Vec::new();
        while rounds < MAX_ROUNDS {
            rounds += 1;
            let mut recs = Vec::new();
            for a in actions {
                let observe = observing(&self.cand);
                let rec = self.run(&observe, a);
                if rec["execution"]["observed_opens"]["truncated"] == true
                    && !opens_truncated.contains(&a.id)
                {
                    opens_truncated.push(a.id.clone());
                }
                recs.push(rec);
            }
            let ok_opens = opened_by_successes(&recs);
            let mut needs = Vec::new();
            for (rec, a) in recs.iter().zip(actions) {
                needs.extend(needs_of(rec, &a.id, &self.cand, &ok_opens));
            }
            self.unmet.clear();
            if !self.apply(needs) {
                return (rounds, false, opens_truncated);
            }
        }
        (rounds, true, opens_truncated)
    }

    fn run(&mut self, policy: &Policy, a: &LearnAction) -> Value {
        self.runs += 1;
        let mut loaded = self.base.clone();
        loaded.policy = policy.clone();
        let rec = (self.runner)(&loaded, &a.raw);
        let ex = &rec["execution"];
        for (i, (_, field)) in LIMITS.iter().enumerate() {
            self.peaks[i] = self.peaks[i].max(ex[field].as_u64().unwrap_or(0));
        }
        rec
    }

    /// Apply what was asked for; true when the candidate changed.
    fn apply(&mut self, needs: Vec<Need>) -> bool {
        let mut changed = false;
        let mut pending = needs;
        loop {
            let mut refused = Vec::new();
            let mut progress = false;
            for n in pending {
                if let Some(why) = no_key(&n) {
                    let u = Unmet {
                        need: "no policy key".into(),
                        evidence: n.evidence.clone(),
                        why,
                    };
                    if !self.unmet.contains(&u) {
                        self.unmet.push(u);
                    }
                    continue;
                }
                let fresh: Vec<Edit> = n
                    .edits
                    .iter()
                    .filter_map(|e| explain::lacking(&self.cand, e))
                    .collect();
                if fresh.is_empty() {
                    self.note(&n);
                    continue;
                }
                match edited(&self.cand, &fresh) {
                    Ok(new) => {
                        let lifted = lifted_by_loader(&self.cand, &new, &fresh);
                        self.cand = new;
                        self.note(&n);
                        if !lifted.is_empty() {
                            // The loader's own consequence of a network (settle_network_attributes).
                            self.note(&Need {
                                edits: vec![Edit {
                                    key: "check.denied_attributes".into(),
                                    op: Op::Remove(lifted),
                                }],
                                evidence: format!(
                                    "{}; the loader lifts these with any network (network.mode)",
                                    n.evidence
                                ),
                                action: n.action.clone(),
                                risk: "the check lets network calls through; the proxy decides what they reach".into(),
                            });
                        }
                        if let Some(k) = stop_limit(&n.edits) {
                            self.stopped_by.push(k);
                        }
                        progress = true;
                        changed = true;
                    }
                    Err(why) => refused.push((n, why)),
                }
            }
            if !progress || refused.is_empty() {
                for (n, why) in refused {
                    let u = Unmet {
                        need: n.edits.iter().map(describe).collect::<Vec<_>>().join("; "),
                        evidence: n.evidence,
                        why: format!("the loader refuses it: {why}"),
                    };
                    if !self.unmet.contains(&u) {
                        self.unmet.push(u);
                    }
                }
                return changed;
            }
            pending = refused.into_iter().map(|(n, _)| n).collect();
        }
    }

    /// Record the evidence of `n` on each of its items (new items become widenings).
    fn note(&mut self, n: &Need) {
        for e in n.edits.iter().flat_map(items) {
            let at = self.widened.iter().position(|w| w.edit == e);
            let w = match at {
                Some(i) => &mut self.widened[i],
                None => {
                    let sentence = super::diff::sentence(&e.key).unwrap_or("no rule for this key");
                    self.widened.push(Widening {
                        exposes: format!("{sentence}; {}", n.risk),
                        edit: e,
                        evidence: Vec::new(),
                        actions: Vec::new(),
                    });
                    self.widened.last_mut().expect("pushed")
                }
            };
            if !w.evidence.contains(&n.evidence) {
                w.evidence.push(n.evidence.clone());
            }
            if !w.actions.contains(&n.action) {
                w.actions.push(n.action.clone());
            }
        }
    }

    fn set_limits(&mut self) -> Vec<LimitSet> {
        let mut out = Vec::new();
        for (i, (key, _)) in LIMITS.iter().enumerate() {
            if self.stopped_by.contains(key) {
                continue;
            }
            let (base, is_bytes) = limit_value(&self.base.policy, key);
            let peak = self.peaks[i];
            let (unit, floor) = match (is_bytes, *key) {
                (false, _) => (100, 1000),
                (true, "limits.memory") => (1 << 20, 64 << 20),
                (true, _) => (1024, 1024),
            };
            let want = (peak.saturating_mul(2).div_ceil(unit) * unit).max(floor);
            let now = limit_value(&self.cand, key).0;
            let learned = want.min(base);
            if learned >= now {
                continue;
            }
            let v = if is_bytes {
                Value::String(Bytes(learned).to_string())
            } else {
                json!(learned)
            };
            let edit = Edit {
                key: key.to_string(),
                op: Op::Set(v.clone()),
            };
            if let Ok(new) = edited(&self.cand, &[edit]) {
                self.cand = new;
                let shown = |n: u64| {
                    if is_bytes {
                        Value::String(Bytes(n).to_string())
                    } else {
                        json!(n)
                    }
                };
                out.push(LimitSet {
                    key: key.to_string(),
                    base: shown(base),
                    learned: v,
                    peak,
                });
            }
        }
        out
    }

    fn verify(&mut self, actions: &[LearnAction]) -> Vec<ActionEnd> {
        let cand = self.cand.clone();
        actions
            .iter()
            .map(|a| {
                let rec = self.run(&cand, a);
                ActionEnd {
                    action: a.id.clone(),
                    status: rec["status"].as_str().unwrap_or("").to_string(),
                    stop_reason: rec["stop_reason"].as_str().unwrap_or("").to_string(),
                }
            })
            .collect()
    }

    /// Drop each widened item the actions that asked for it do not need. Judged only where
    /// every asking action succeeds under the candidate (`ok`): a failing one proves nothing.
    fn minimise(&mut self, actions: &[LearnAction], ok: &[String]) -> Vec<Widening> {
        let mut dropped = Vec::new();
        let mut i = self.widened.len();
        while i > 0 {
            i -= 1;
            let w = self.widened[i].clone();
            if !w.actions.iter().all(|a| ok.contains(a)) {
                continue;
            }
            let Ok(without) = edited(&self.cand, &[undo(&w.edit, &self.base.policy)]) else {
                continue; // the loader needs it with the rest (an allowlist's only host)
            };
            if without == self.cand {
                continue; // the loader puts it back: implied by another widening
            }
            let askers = actions.iter().filter(|a| w.actions.contains(&a.id));
            let mut all_ok = true;
            for a in askers {
                if self.run(&without, a)["status"] != "ok" {
                    all_ok = false;
                    break;
                }
            }
            if all_ok {
                self.cand = without;
                dropped.push(self.widened.remove(i));
            }
        }
        dropped
    }
}

// long because it reads each kind of evidence in turn: a stop, the check's findings, the
// syscalls, the proxy's log.
/// What a run asked for.
fn needs_of(rec: &Value, id: &str, cand: &Policy, ok_opens: &BTreeSet<String>) -> Vec<Need> {
    let mut out = Vec::new();
    let reason = rec["stop_reason"].as_str().unwrap_or("");
    let push_need = |out: &mut Vec<Need>, e: explain::Explanation, evidence: String| {
        if !e.edits.is_empty() {
            out.push(Need {
                edits: e.edits,
                evidence,
                action: id.to_string(),
                risk: e.risks.join("; "),
            });
        }
    };
    // A stop the observe mode does not lift: the language, the contract's caps, a limit.
    let liftable_stop = reason.starts_with("policy_block:language")
        || reason.starts_with("invalid_action:")
        || reason == "invalid_request:output_mode_denied"
        || matches!(
            reason,
            "code_timeout"
                | "code_cpu_limit"
                | "code_memory_limit"
                | "code_pids_limit"
                | "code_output_too_large"
                | "code_stderr_too_large"
                | "max_seconds"
        );
    if liftable_stop {
        let e = explain::explain(rec, cand);
        push_need(&mut out, e, format!("action {id}: stopped {reason}"));
    }
    let none = Vec::new();
    let findings = rec["decision"]["check"]["findings"]
        .as_array()
        .unwrap_or(&none);
    for f in findings {
        let rule = f["rule"].as_str().unwrap_or("");
        let evidence = format!(
            "action {id}: line {}, column {}: {rule}",
            f["line"], f["column"]
        );
        let (kind, what) = rule.split_once(':').unwrap_or((rule, ""));
        if kind == "attr_not_allowed"
            && agentjail_check::stdlib::NETWORK_ATTRIBUTES.contains(&what)
            && !cand.has_network()
        {
            // These follow [network]: lifted with the first host the program asks for.
            out.push(unmet_need(
                id,
                &evidence,
                Some(format!(
                    "`{what}` is denied by the check under a policy without network, and lifted by the loader once the policy lists a host: the action asked for none (through the proxy)"
                )),
            ));
            continue;
        }
        if rule == "network_literal_blocked" {
            out.push(Need {
                edits: vec![set("check.deny_url_literals", json!(false))],
                evidence,
                action: id.to_string(),
                risk: "the program may name URLs in its source".into(),
            });
            continue;
        }
        let one = json!({"stop_reason": format!("policy_block:static_policy_violation:{rule}"),
                         "decision": {"violations": [f]}});
        let e = explain::explain(&one, cand);
        if e.edits.is_empty() {
            out.push(unmet_need(id, &evidence, e.no_edit));
        } else {
            push_need(&mut out, e, evidence);
        }
    }
    syscall_needs(rec, id, cand, &mut out);
    open_needs(rec, id, cand, ok_opens, &mut out);
    let requests = rec["network"]["requests"].as_array().unwrap_or(&none);
    for r in requests.iter().filter(|r| r["allowed"] == false) {
        if let Some(n) = network_need(r, id) {
            out.push(n);
        }
    }
    out
}

/// The check's attributes the loader lifted on its own in going from `old` to `new` (not
/// removed by `edits`): the network ones, once the policy has a network.
fn lifted_by_loader(old: &Policy, new: &Policy, edits: &[Edit]) -> Vec<String> {
    old.check
        .denied_attributes
        .iter()
        .filter(|a| !new.check.denied_attributes.contains(a))
        .filter(|a| !edits.iter().any(|e| e.op == Op::Remove(vec![(*a).clone()])))
        .cloned()
        .collect()
}

/// The observed syscalls: each one's group, or a need not met.
fn syscall_needs(rec: &Value, id: &str, cand: &Policy, out: &mut Vec<Need>) {
    let none = Vec::new();
    let syscalls = rec["execution"]["observed_syscalls"]
        .as_array()
        .unwrap_or(&none);
    for s in syscalls.iter().filter_map(Value::as_str) {
        let one = json!({"stop_reason": format!("code_forbidden_syscall:{s}")});
        let e = explain::explain(&one, cand);
        let group = e.edits.first().and_then(|ed| match &ed.op {
            Op::Add(g) => g.first().cloned(),
            _ => None,
        });
        let evidence = match &group {
            Some(g) => format!("action {id}: syscall {s} (group {g})"),
            None => format!("action {id}: syscall {s}"),
        };
        if e.edits.is_empty() {
            out.push(unmet_need(id, &evidence, e.no_edit));
        } else {
            out.push(Need {
                edits: e.edits,
                evidence,
                action: id.to_string(),
                risk: e.risks.join("; "),
            });
        }
    }
}

/// The jail's own writable directories: a path missing there is the program's business,
/// never a bind's.
const JAIL_OWN: [&str; 2] = ["/tmp", "/app/out"];

/// The stated rule for the files, as written into the learned file.
pub fn open_rule() -> &'static str {
    "a path the program opened that its jail lacked (execution.observed_opens) becomes a \
     filesystem.read_only bind of its directory (the path itself when it is a directory) \
     only when the host has it, it is world-readable and every directory above it \
     world-searchable (the jail's user owns nothing on the host), no symlink is on its way \
     and the jail does not already bind its directory; a path the host lacks is a probe (a .pyc, a locale) and no evidence; a path the \
     loader refuses to bind (/etc, /root, /home, /var, /proc, ...) or the host's mode does \
     not let the jail read is a need not met when the asking action failed and no action that \
     opened it succeeded (one that succeeded did not need it); /tmp and /app/out are the jail's own"
}

/// `path` with `.`, `..` and repeated slashes taken out, as the kernel walks it (lexically:
/// the symlink check comes after); None when it is not absolute.
fn normalised(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// The paths opened (absent from the jail) by the runs that succeeded: an action that
/// succeeded without one proves it is not needed (the loader's `/etc/ld.so.cache`).
fn opened_by_successes(recs: &[Value]) -> BTreeSet<String> {
    recs.iter()
        .filter(|r| r["status"] == "ok")
        .flat_map(|r| {
            r["execution"]["observed_opens"]["paths"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|o| o["path"].as_str().and_then(normalised))
        .collect()
}

/// Whether the jail's user (no owner or group of any host file) may read `p` on the host:
/// it is world-readable and every directory above it world-searchable.
fn world_readable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(m) = std::fs::metadata(p) else {
        return false;
    };
    let need = if m.is_dir() { 0o005 } else { 0o004 };
    m.permissions().mode() & need == need
        && p.ancestors()
            .skip(1)
            .all(|a| std::fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// The observed opens (`execution.observed_opens`) under [`open_rule`]: a bind of the
/// nearest directory, or a need not met.
fn open_needs(
    rec: &Value,
    id: &str,
    cand: &Policy,
    ok_opens: &BTreeSet<String>,
    out: &mut Vec<Need>,
) {
    let none = Vec::new();
    let opens = rec["execution"]["observed_opens"]["paths"]
        .as_array()
        .unwrap_or(&none);
    let failed = rec["status"] != "ok";
    for o in opens {
        let (Some(given), Some(syscall)) = (o["path"].as_str(), o["syscall"].as_str()) else {
            continue;
        };
        let Some(path) = normalised(given) else {
            continue; // relative to a directory fd that could not be read
        };
        if path == "/" || JAIL_OWN.iter().any(|r| super::validate::is_under(&path, r)) {
            continue;
        }
        let host = std::path::Path::new(&path);
        let Ok(meta) = std::fs::metadata(host) else {
            continue; // a probe: the host has no such path either
        };
        let dir = if meta.is_dir() {
            path.clone()
        } else {
            match path.rsplit_once('/') {
                Some(("", _)) | None => "/".to_string(),
                Some((d, _)) => d.to_string(),
            }
        };
        let bound = cand
            .filesystem
            .read_only
            .iter()
            .chain(&cand.filesystem.optional);
        if bound
            .into_iter()
            .any(|b| super::validate::is_under(&dir, b))
        {
            continue; // the jail has that directory: the path is missing for another reason
        }
        let evidence = format!("action {id}: {syscall} {path} (absent from the jail)");
        let unmet = |why: String| unmet_need(id, &evidence, Some(why));
        let canonical = std::fs::canonicalize(&path)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default();
        let edit = Edit {
            key: "filesystem.read_only".into(),
            op: Op::Add(vec![dir.clone()]),
        };
        let refused = if canonical != path {
            Some(format!(
                "{path} resolves through a symlink to {canonical:?}; no bind is proposed through a link"
            ))
        } else if let Err(why) = edited(cand, std::slice::from_ref(&edit)) {
            Some(format!("the loader refuses a bind of {dir}: {why}"))
        } else if !world_readable(host) {
            Some(format!(
                "{path} is not readable by the jail's user on the host (world-readable file, world-searchable directories)"
            ))
        } else {
            None
        };
        match refused {
            Some(why) if failed && !ok_opens.contains(&path) => out.push(unmet(why)),
            Some(_) => {} // the action succeeded without it: no need
            None => out.push(Need {
                edits: vec![edit],
                evidence,
                action: id.to_string(),
                risk: format!("the program reads every file under {dir} (read-only)"),
            }),
        }
    }
}

/// A need that no key can meet (kept as an [`Unmet`] when the round ends: an empty edit
/// list the loader "refuses").
fn unmet_need(id: &str, evidence: &str, why: Option<String>) -> Need {
    Need {
        edits: vec![Edit {
            key: "-".into(),
            op: Op::Set(Value::String(
                why.unwrap_or_else(|| "no policy key is behind it".into()),
            )),
        }],
        evidence: evidence.to_string(),
        action: id.to_string(),
        risk: String::new(),
    }
}

/// The reason of an [`unmet_need`], if `n` is one.
fn no_key(n: &Need) -> Option<String> {
    match n.edits.as_slice() {
        [Edit {
            key,
            op: Op::Set(Value::String(why)),
        }] if key == "-" => Some(why.clone()),
        _ => None,
    }
}

/// The proxy's log line of a denied request → the allowlist edits that admit it.
fn network_need(r: &Value, id: &str) -> Option<Need> {
    let method = r["method"].as_str().unwrap_or("?");
    let (target, edits) = explain::network_edits(r)?;
    match edits {
        Ok(edits) => Some(Need {
            edits,
            evidence: format!("action {id}: asked for {target} ({method})"),
            action: id.to_string(),
            risk: "the program reaches that host, and anything it serves".into(),
        }),
        // request_limit, resolve_failed, a malformed head: no allowlist entry lifts it.
        Err(reason) => Some(unmet_need(
            id,
            &format!("action {id}: asked for {target} ({method}): denied {reason}"),
            Some(format!(
                "the proxy denied it for `{reason}`, which no allowlist entry lifts"
            )),
        )),
    }
}

fn set(key: &str, v: Value) -> Edit {
    Edit {
        key: key.to_string(),
        op: Op::Set(v),
    }
}

/// One edit per list item.
fn items(e: &Edit) -> Vec<Edit> {
    let one = |op: Op| Edit {
        key: e.key.clone(),
        op,
    };
    match &e.op {
        Op::Add(v) => v.iter().map(|i| one(Op::Add(vec![i.clone()]))).collect(),
        Op::Remove(v) => v.iter().map(|i| one(Op::Remove(vec![i.clone()]))).collect(),
        Op::Set(v) => vec![one(Op::Set(v.clone()))],
    }
}

/// The edit that takes `e` back out (a set goes back to the base's value).
fn undo(e: &Edit, base: &Policy) -> Edit {
    let op = match &e.op {
        Op::Add(v) => Op::Remove(v.clone()),
        Op::Remove(v) => Op::Add(v.clone()),
        Op::Set(_) => Op::Set(explain::current(base, &e.key)),
    };
    Edit {
        key: e.key.clone(),
        op,
    }
}

/// The limit key a stop's edit raised, if any.
fn stop_limit(edits: &[Edit]) -> Option<&'static str> {
    edits.iter().find_map(|e| {
        LIMITS
            .iter()
            .map(|(k, _)| *k)
            .find(|k| *k == e.key && matches!(e.op, Op::Set(_)))
    })
}

/// A limit's value in bytes or ms, and whether it is a byte size.
fn limit_value(p: &Policy, key: &str) -> (u64, bool) {
    match explain::current(p, key) {
        Value::String(s) => (super::parse_bytes(&s).unwrap_or(0), true),
        v => (v.as_u64().unwrap_or(0), false),
    }
}

fn describe(e: &Edit) -> String {
    match &e.op {
        Op::Add(v) => format!("{} += {}", e.key, quoted(v)),
        Op::Remove(v) => format!("{} -= {}", e.key, quoted(v)),
        Op::Set(v) if e.key == "-" => v.as_str().unwrap_or("").to_string(),
        Op::Set(v) => format!("{} = {v}", e.key),
    }
}

/// One tightened limit for the header: `limits.memory: 512 MiB -> 128 MiB (2x the measured
/// peak 40 MiB, rounded up; at least 64 MiB)`.
fn tightened(s: &LimitSet) -> String {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let bytes = s.learned.is_string();
    let (peak, floor) = if bytes {
        let floor = if s.key == "limits.memory" {
            64 << 20
        } else {
            1024
        };
        (Bytes(s.peak).to_string(), Bytes(floor).to_string())
    } else {
        (format!("{} ms", s.peak), "1000 ms".to_string())
    };
    format!(
        "{}: {} -> {} (2x the measured peak {peak}, rounded up; at least {floor})",
        s.key,
        text(&s.base),
        text(&s.learned)
    )
}

fn quoted(v: &[String]) -> String {
    v.iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

// long because it writes the header section by section, in the order a reviewer reads it.
/// The learned file: a header (the commented diff: every widened item with its evidence and
/// what it exposes, the needs not met, the limits and their rule), then the whole policy
/// with a `# learned:` line above each key that differs from the base.
pub fn render(base: &LoadedPolicy, l: &Learned) -> String {
    let mut h = String::new();
    let mut line = |s: &str| {
        for part in s.lines() {
            h.push_str(&format!("# {part}\n").replace("# \n", "#\n"));
        }
    };
    line(&format!(
        "Learned by `agentjail learn` from {} action(s) ({}) over the base policy {} (sha256 {}).",
        l.actions.len(),
        l.actions
            .iter()
            .map(|a| a.action.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        base.path,
        base.sha256
    ));
    line(&format!(
        "{} observe round(s), {} run(s){}.",
        l.rounds,
        l.runs,
        if l.rounds_exhausted {
            format!("; the actions still asked for more after {MAX_ROUNDS} rounds")
        } else {
            String::new()
        }
    ));
    for a in &l.actions {
        line(&format!(
            "under this policy, enforced: action {}: {} ({})",
            a.action, a.status, a.stop_reason
        ));
    }
    line("");
    line("Widened (weaker than the base), each with its evidence and what it exposes:");
    if l.widened.is_empty() {
        line("  nothing");
    }
    for w in &l.widened {
        line(&format!("  {}", describe(&w.edit)));
        for e in &w.evidence {
            line(&format!("    evidence: {e}"));
        }
        line(&format!("    exposes: {}", w.exposes));
    }
    if !l.not_needed.is_empty() {
        line("Asked for in observe mode but not needed (every asking action succeeds without it; not applied):");
        for w in &l.not_needed {
            line(&format!(
                "  {}  ({})",
                describe(&w.edit),
                w.evidence.join("; ")
            ));
        }
    }
    for id in &l.opens_truncated {
        line(&format!(
            "action {id} opened more distinct paths its jail lacks than a record holds (execution.observed_opens.truncated): the rest were not read, so not learned from"
        ));
    }
    if !l.unmet.is_empty() {
        line("Needs NOT met (no policy may hold them; not applied, the action may still fail):");
        for u in &l.unmet {
            line(&format!("  {}: {}  ({})", u.evidence, u.need, u.why));
        }
    }
    line("Tightened (stronger than the base), from the measured peaks:");
    if l.limits.is_empty() {
        line("  nothing");
    }
    for s in &l.limits {
        line(&format!("  {}", tightened(s)));
    }
    line(&format!("Files: {}.", open_rule()));
    line(&format!("Limits: {}.", l.limit_rule));
    for s in &l.limits {
        line(&format!(
            "  {} = {} (peak {}; base {})",
            s.key, s.learned, s.peak, s.base
        ));
    }
    h.push('\n');
    let changed: Vec<String> = super::diff::diff(&base.policy, &l.policy)
        .into_iter()
        .map(|c| c.key)
        .collect();
    let body = toml::to_string(&l.policy).unwrap_or_default();
    let mut section = String::new();
    for row in body.lines() {
        let t = row.trim_start();
        if t.starts_with('[') {
            section = t.trim_matches(|c| c == '[' || c == ']').to_string();
        } else if let Some((k, _)) = t.split_once(" = ") {
            let key = if section.is_empty() {
                k.to_string()
            } else {
                format!("{section}.{k}")
            };
            if changed.contains(&key) {
                h.push_str("# learned: differs from the base (see above)\n");
            }
        }
        h.push_str(row);
        h.push('\n');
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_need_names_exactly_the_host_asked_for() {
        let r = json!({"host": "localhost", "port": 8080, "method": "GET", "allowed": false,
                       "reason": "not_allowlisted"});
        let n = network_need(&r, "a").expect("need");
        let allow: Vec<&Edit> = n
            .edits
            .iter()
            .filter(|e| e.key == "network.allow")
            .collect();
        assert_eq!(allow.len(), 1);
        assert_eq!(allow[0].op, Op::Add(vec!["localhost:8080".into()]));
        assert!(n.edits.iter().any(|e| e.key == "network.allow_http"));
        let private = json!({"host": "localhost", "port": 8080, "method": "CONNECT",
                             "allowed": false, "reason": "non_public_address:127.0.0.1:loopback"});
        let n = network_need(&private, "a").expect("need");
        assert!(n
            .edits
            .iter()
            .any(|e| e.key == "network.allow_private"
                && e.op == Op::Add(vec!["127.0.0.1/32".into()])));
        assert!(!n.edits.iter().any(|e| e.key == "network.allow_http"));
        let limit = json!({"host": "x.test", "port": 443, "method": "CONNECT",
                           "allowed": false, "reason": "request_limit"});
        assert_eq!(network_need(&limit, "a").expect("need").edits[0].key, "-");
    }

    #[test]
    fn observed_opens_bind_only_what_the_loader_and_the_host_allow() {
        assert_eq!(normalised("/opt//a/./b/../c").as_deref(), Some("/opt/a/c"));
        assert_eq!(normalised("/opt/../../root/x").as_deref(), Some("/root/x"));
        assert_eq!(normalised("rel/x"), None);
        let p = Policy::default();
        let rec = |status: &str| {
            json!({"status": status, "execution": {"observed_opens": {"truncated": false, "paths": [
                {"path": "/etc/../etc/shadow", "syscall": "openat"},
                {"path": "/agentjail-no-such-dir/x.pyc", "syscall": "openat"},
                {"path": "/tmp/made-here", "syscall": "openat"},
                {"path": "x.py", "syscall": "openat", "dirfd": 5},
            ]}}})
        };
        let needs = needs_of(&rec("stopped"), "a", &p, &BTreeSet::new());
        assert_eq!(needs.len(), 1, "only /etc/shadow is evidence");
        let why = no_key(&needs[0]).expect("a need not met");
        assert!(why.contains("the loader refuses a bind of /etc"), "{why}");
        assert!(
            needs[0].evidence.contains("openat /etc/shadow"),
            "{}",
            needs[0].evidence
        );
        // An action that succeeded without it did not need it.
        assert!(needs_of(&rec("ok"), "a", &p, &BTreeSet::new()).is_empty());
        // Nor one another action opened and succeeded without.
        let seen = opened_by_successes(&[rec("ok")]);
        assert!(needs_of(&rec("stopped"), "a", &p, &seen).is_empty());
    }

    #[test]
    fn a_syscall_in_no_group_is_a_need_not_met() {
        let p = Policy::default();
        let rec = json!({"stop_reason": "code_runtime_error:1",
                         "execution": {"observed_syscalls": ["unshare", "socket"]}});
        let needs = needs_of(&rec, "a", &p, &BTreeSet::new());
        assert_eq!(needs.len(), 2);
        assert_eq!(needs[0].edits[0].key, "-", "unshare: in no group");
        assert_eq!(needs[1].edits[0].key, "seccomp.allow_groups");
        // explain's rule: the first group holding it that the policy lacks (the next round
        // finds `network` when an AF_INET socket is still refused for its family).
        assert_eq!(
            needs[1].evidence,
            "action a: syscall socket (group sockets_local)"
        );
    }
}
