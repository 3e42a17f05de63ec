//! The network allowlist at run time: the jail's listening socket (made by its setup on
//! its own loopback, taken by the handshake: crates/agentjail-jail/src/child.rs, 5c) goes
//! to a proxy (crates/agentjail-net) for the job's lifetime (a session's or a workspace's:
//! until it ends); its log becomes the record's `network` part (drained into each call's
//! or command's record for a session or workspace). The argument is in docs/SECURITY.md, "Network by allowlist".

use crate::contract::Action;
use crate::pipeline::record::{Recorder, StopReason};
use crate::policy::Policy;
use agentjail_jail::launch::StartedJail;
use agentjail_jail::JailError;
use serde_json::{json, Value};
use std::net::TcpListener;

/// A job's running proxy.
pub struct NetSession {
    proxy: Option<agentjail_net::Proxy>,
    narrowed: bool,
}

fn wake(l: &TcpListener) {
    let _ = agentjail_jail::os::fd::shutdown_socket(l);
}

impl NetSession {
    /// A session's call: the requests that ended during it into the record's `network`
    /// (counters are the session's so far); the host of a denial under `deny_is_stop`.
    pub fn drain_into(&self, r: &mut Recorder, policy: &Policy) -> Option<String> {
        let report = self.proxy.as_ref()?.drain();
        r.sections.network = Some(record_json(policy, &report, self.narrowed));
        report.first_denied.filter(|_| policy.network.deny_is_stop)
    }
}

/// A proxy never outlives its owner (a session dropped without its close): stop it.
impl Drop for NetSession {
    fn drop(&mut self) {
        if let Some(p) = self.proxy.take() {
            p.finish(wake);
        }
    }
}

/// Whether an action's hints narrow the allowlist to nothing: its `network_access` hint
/// (only "denied" spellings pass the contract) asks for no network.
pub fn narrowed_by(action: &Action) -> bool {
    action
        .policy_hints
        .as_ref()
        .is_some_and(|h| h.network_access.is_some())
}

/// Start the proxy for `jail` when `policy` has an allowlist (None otherwise); `narrowed`:
/// every request is denied and logged ([`narrowed_by`]). A jail without the listening
/// socket fails closed: `sandbox_unavailable:network`.
pub fn start(
    policy: &Policy,
    narrowed: bool,
    jail: &mut StartedJail,
) -> Result<Option<NetSession>, JailError> {
    let net = &policy.network;
    if !net.allowlist() {
        return Ok(None);
    }
    let unavailable = |detail: &str| JailError::Unavailable {
        control: "network".into(),
        detail: detail.into(),
    };
    let fd = jail
        .take_net()
        .ok_or_else(|| unavailable("the jail handed over no allowlist listener"))?;
    let listener = TcpListener::from(fd);
    // The jail's setup listens with a backlog of 64 (sys::tcp_listen_loopback); a burst of more
    // connects than the accept thread takes in meanwhile overflowed it, and each dropped
    // SYN cost the program a 1 s (then 3 s) retransmit. A backlog of the connection limit
    // holds every connection the policy admits at once (the kernel caps it at the
    // namespace's somaxconn, 4096 by default). Should the call fail, the 64 stays: slower
    // bursts, nothing less safe.
    let _ = agentjail_jail::os::fd::set_listen_backlog(&listener, net.max_connections.max(64));
    let mut rules = net.rules();
    if narrowed {
        rules.allow.clear();
        rules.broker = agentjail_net::Broker::default();
    }
    let on_deny: Option<agentjail_net::OnDeny> = match (net.deny_is_stop, jail.program_killer()) {
        (true, Some(k)) => Some(Box::new(move |_host: &str| k.kill())),
        (true, None) => {
            return Err(unavailable(
                "no handle on the program to stop it at a denial",
            ))
        }
        (false, _) => None,
    };
    let proxy = agentjail_net::Proxy::start(
        listener,
        rules,
        Box::new(agentjail_net::SystemResolver),
        on_deny,
    )
    .map_err(|e| unavailable(&format!("the proxy thread did not start: {e}")))?;
    Ok(Some(NetSession {
        proxy: Some(proxy),
        narrowed,
    }))
}

/// Stop the proxy (the jail is gone) and put its log in the record's `network`. Returns
/// the stop reason a denial makes under `deny_is_stop`.
pub fn finish(r: &mut Recorder, policy: &Policy, s: Option<NetSession>) -> Option<StopReason> {
    let mut s = s?;
    let report = s.proxy.take()?.finish(wake);
    r.sections.network = Some(record_json(policy, &report, s.narrowed));
    let denied = report
        .first_denied
        .filter(|_| policy.network.deny_is_stop)?;
    Some(StopReason::CodeNetworkDenied(denied))
}

/// The record's `network` part.
pub fn record_json(policy: &Policy, rep: &agentjail_net::Report, narrowed: bool) -> Value {
    let requests: Vec<Value> = rep
        .entries
        .iter()
        .map(|e| {
            json!({"host": e.host, "port": e.port, "method": e.method, "allowed": e.allowed,
                   "reason": e.reason, "address": e.address, "bytes_in": e.bytes_in,
                   "bytes_out": e.bytes_out, "ms": e.ms, "credential": e.credential})
        })
        .collect();
    json!({
        "mode": "allowlist",
        "allow": if narrowed { Vec::new() } else { policy.network.allow.clone() },
        "narrowed_by_hint": narrowed,
        "requests": requests,
        "requests_dropped": rep.dropped,
        "connections": rep.connections,
        "request_count": rep.requests,
        "bytes_in": rep.bytes_in,
        "bytes_out": rep.bytes_out,
        "denied": rep.entries.iter().filter(|e| !e.allowed).count(),
        "unfinished": rep.unfinished,
    })
}
