//! `[network]`: none (the default: an empty network namespace), the host's network
//! (`enabled = true`, lint warns), or an allowlist enforced by agentjail's proxy
//! (`mode = "allowlist"`, crates/agentjail-net; docs/SECURITY.md "Network by allowlist").

use super::invalid::{invalid, invalid_item, Invalid};
use super::{Bytes, Policy};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    /// No network: the jail's namespace has only a loopback, and it stays down.
    #[default]
    None,
    /// The jail reaches the hosts in `allow` through agentjail's proxy, and nothing else.
    Allowlist,
}

/// What `max_connections` and `max_requests` count over in a session or a workspace,
/// whose proxy lives across calls (a run has one call: the same either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionBudget {
    /// Each call's or command's: counted from the previous one's record (a background
    /// process's connections in between count against the next command's).
    #[default]
    Command,
    /// The session's or workspace's whole life.
    Life,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Network {
    /// true: no network namespace, the host's network is shared (`policy lint` warns).
    /// Exclusive with `mode = "allowlist"`.
    pub enabled: bool,
    pub mode: NetworkMode,
    /// `host:port`, `*.domain:port`, `IP:port`, `[IPv6]:port`: what the proxy admits.
    pub allow: Vec<String>,
    /// Address ranges (CIDR) the proxy may connect to although they are not the public
    /// internet (private, loopback, link-local, metadata): empty refuses them all.
    pub allow_private: Vec<String>,
    /// Plain-HTTP requests (absolute form, `Host` checked) besides CONNECT tunnels to TLS.
    pub allow_http: bool,
    /// A denied request stops the run as `code_network_denied:<host>`; otherwise the
    /// program gets a 403 from the proxy and goes on.
    pub deny_is_stop: bool,
    /// Per-run totals over every connection: bytes from the network, bytes to it.
    pub max_bytes_in: Bytes,
    pub max_bytes_out: Bytes,
    pub max_connections: u32,
    pub max_requests: u32,
    /// Whether those two start again at each call of a session or command of a
    /// workspace (`"command"`) or count over its whole life (`"life"`).
    pub connection_budget: ConnectionBudget,
    /// A transfer that moves nothing for this long is cut.
    pub idle_timeout_ms: u64,
    /// The upstream connect, and the program's request head or ClientHello.
    pub connect_timeout_ms: u64,
    /// Secrets the proxy injects as a header for one host (`[[network.credentials]]`,
    /// policy::credentials).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<super::credentials::Credential>,
    /// The PEM bundle that https credential upstreams are verified against (default: the
    /// system's, /etc/ssl/certs/ca-certificates.crt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// The credentials as loaded (their values, the TLS client): filled when the policy
    /// loads, never printed.
    #[serde(skip)]
    pub broker: agentjail_net::Broker,
}

impl Default for Network {
    fn default() -> Self {
        let l = agentjail_net::Limits::default();
        Network {
            enabled: false,
            mode: NetworkMode::None,
            allow: Vec::new(),
            allow_private: Vec::new(),
            allow_http: false,
            deny_is_stop: false,
            max_bytes_in: Bytes(l.bytes_in),
            max_bytes_out: Bytes(l.bytes_out),
            max_connections: l.connections,
            max_requests: l.requests,
            connection_budget: ConnectionBudget::default(),
            idle_timeout_ms: l.idle.as_millis() as u64,
            connect_timeout_ms: l.connect.as_millis() as u64,
            credentials: Vec::new(),
            ca_file: None,
            broker: agentjail_net::Broker::default(),
        }
    }
}

/// The port the proxy listens on in every jail's own loopback (each jail has its own
/// network namespace, so it never collides; HTTP proxies' usual port).
pub const PROXY_PORT: u16 = 3128;

impl Network {
    pub fn allowlist(&self) -> bool {
        self.mode == NetworkMode::Allowlist
    }

    /// The TCP ports the program may connect to on its loopback: the proxy's, or none.
    pub fn proxy_ports(&self) -> Vec<u16> {
        self.allowlist().then_some(PROXY_PORT).into_iter().collect()
    }

    /// The proxy's rules (the policy was validated: the entries parse).
    pub fn rules(&self) -> agentjail_net::Rules {
        use std::time::Duration;
        agentjail_net::Rules {
            allow: agentjail_net::Rules::parse_allow(&self.allow).unwrap_or_default(),
            allow_private: agentjail_net::Rules::parse_private(&self.allow_private)
                .unwrap_or_default(),
            allow_http: self.allow_http,
            limits: agentjail_net::Limits {
                bytes_in: self.max_bytes_in.0,
                bytes_out: self.max_bytes_out.0,
                connections: self.max_connections,
                requests: self.max_requests,
                per_drain: self.connection_budget == ConnectionBudget::Command,
                idle: Duration::from_millis(self.idle_timeout_ms),
                connect: Duration::from_millis(self.connect_timeout_ms),
            },
            broker: self.broker.clone(),
        }
    }

    /// The jail's environment for the allowlist: every spelling of the proxy variables
    /// common clients read (curl, requests, pip, urllib, node's undici with the flag).
    pub fn proxy_env(&self) -> Vec<(String, String)> {
        if !self.allowlist() {
            return Vec::new();
        }
        let url = format!("http://127.0.0.1:{PROXY_PORT}");
        let mut v = Vec::new();
        for k in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            v.push((k.to_string(), url.clone()));
        }
        v.push(("NO_PROXY".into(), String::new()));
        v.push(("no_proxy".into(), String::new()));
        v
    }
}

pub(super) fn validate(p: &Policy) -> Result<(), Invalid> {
    let n = &p.network;
    if !n.allowlist() {
        let set =
            !n.allow.is_empty() || !n.allow_private.is_empty() || n.allow_http || n.deny_is_stop;
        if set {
            return Err(invalid(
                "network.allow",
                "allow, allow_private, allow_http and deny_is_stop apply to mode = \"allowlist\" only",
                "set network.mode = \"allowlist\", or remove them",
            ));
        }
        return Ok(());
    }
    if n.enabled {
        return Err(invalid(
            "network.enabled",
            "enabled = true shares the host's network, which no allowlist can then restrict",
            "remove enabled (mode = \"allowlist\" keeps the jail's own network namespace)",
        ));
    }
    if n.allow.is_empty() {
        return Err(invalid(
            "network.allow",
            "mode = \"allowlist\" with an empty allow list reaches nothing",
            "list host:port entries (\"pypi.org:443\", \"*.example.com:443\"), or use mode = \"none\"",
        ));
    }
    entries(n)?;
    if !p.seccomp.allow_groups.iter().any(|g| g == "network") {
        return Err(invalid(
            "seccomp.allow_groups",
            "mode = \"allowlist\" needs the `network` syscall group: the program connects to the proxy on the jail's loopback with an AF_INET socket",
            "add \"network\" (the jail's namespace has no other interface; the proxy decides what leaves it)",
        ));
    }
    if p.seccomp.errno_syscalls.iter().any(|s| s == "socket") {
        return Err(invalid(
            "seccomp.errno_syscalls",
            "mode = \"allowlist\" needs socket(): errno_syscalls refuses it with EPERM, so the program could never reach the proxy",
            "remove \"socket\" (the `network` group allows AF_INET and AF_INET6 sockets only; AF_UNIX stays refused without sockets_local)",
        ));
    }
    // The errno list wins over the groups: getpeername refused there breaks TLS through the
    // proxy (Python's ssl asks it of every socket it wraps), silently.
    if p.seccomp.errno_syscalls.iter().any(|s| s == "getpeername") {
        return Err(invalid(
            "seccomp.errno_syscalls",
            "mode = \"allowlist\" needs getpeername(): errno_syscalls refuses it with EPERM, so TLS through the proxy fails (Python's ssl asks it of every socket it wraps)",
            "remove \"getpeername\" (the `network` group allows it)",
        ));
    }
    limits(n)
}

/// The allow and allow_private entries, each parsed as the proxy will.
fn entries(n: &Network) -> Result<(), Invalid> {
    for (i, a) in n.allow.iter().enumerate() {
        agentjail_net::rules::Allow::parse(a).map_err(|m| {
            let hint = "write host:port, *.domain:port, IP:port or [IPv6]:port";
            invalid_item("network.allow", a, m.to_string(), hint)
        })?;
        if n.allow[..i].contains(a) {
            let m = format!("{a:?} is listed twice");
            return Err(invalid_item("network.allow", a, m, "remove the duplicate"));
        }
    }
    for c in &n.allow_private {
        agentjail_net::addr::Cidr::parse(c).map_err(|m| {
            let hint = "write an address or a CIDR range (10.0.0.0/8)";
            invalid_item("network.allow_private", c, m.to_string(), hint)
        })?;
    }
    Ok(())
}

fn limits(n: &Network) -> Result<(), Invalid> {
    let limits = [
        (
            "network.max_connections",
            u64::from(n.max_connections),
            1,
            10_000,
        ),
        (
            "network.max_requests",
            u64::from(n.max_requests),
            1,
            100_000,
        ),
        ("network.idle_timeout_ms", n.idle_timeout_ms, 10, 3_600_000),
        (
            "network.connect_timeout_ms",
            n.connect_timeout_ms,
            10,
            600_000,
        ),
        ("network.max_bytes_in", n.max_bytes_in.0, 1, 1 << 40),
        ("network.max_bytes_out", n.max_bytes_out.0, 1, 1 << 40),
    ];
    for (key, v, min, max) in limits {
        if v < min || v > max {
            let m = format!("{v} is outside {min}..={max}");
            return Err(invalid(key, m, "pick a value in the range"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::load_str;

    const GROUPS: &str = "[seccomp]\nallow_groups = [\"basic_io\", \"files_read\", \"memory\", \"process_self\", \"exec\", \"network\"]\n";

    fn load(net: &str, seccomp: &str) -> Result<super::Network, String> {
        load_str(&format!("version = 1\n[network]\n{net}\n{seccomp}"), "test")
            .map(|l| l.policy.network)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_default_is_no_network() {
        let n = load("", "").unwrap();
        assert!(!n.allowlist() && n.proxy_env().is_empty());
    }

    #[test]
    fn an_allowlist_loads_and_makes_rules_and_variables() {
        let n = load(
            "mode = \"allowlist\"\nallow = [\"pypi.org:443\", \"*.example.com:443\", \"[::1]:80\"]\nallow_private = [\"10.0.0.0/8\"]\nmax_requests = 5\nmax_bytes_in = \"1MiB\"",
            GROUPS,
        )
        .unwrap();
        let r = n.rules();
        assert_eq!(r.allow.len(), 3);
        assert_eq!(r.allow_private.len(), 1);
        assert_eq!((r.limits.requests, r.limits.bytes_in), (5, 1 << 20));
        let env = n.proxy_env();
        assert!(env.contains(&("HTTPS_PROXY".into(), "http://127.0.0.1:3128".into())));
        assert!(env.contains(&("NO_PROXY".into(), String::new())));
    }

    #[test]
    fn workspaces_take_an_allowlist() {
        let net = "mode = \"allowlist\"\nallow = [\"pypi.org:443\"]\n[workspace]\nenabled = true";
        let n = load(net, GROUPS).unwrap();
        assert!(n.allowlist());
    }

    #[test]
    fn bad_allowlists_are_refused_with_the_key() {
        for (net, seccomp, key) in [
            ("mode = \"allowlist\"", GROUPS, "network.allow"),
            (
                "mode = \"allowlist\"\nallow = [\"pypi.org\"]",
                GROUPS,
                "network.allow",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"*:443\"]",
                GROUPS,
                "network.allow",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"a.org:1\", \"a.org:1\"]",
                GROUPS,
                "network.allow",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"a.org:1\"]\nallow_private = [\"10/8\"]",
                GROUPS,
                "network.allow_private",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"a.org:1\"]",
                "",
                "seccomp.allow_groups",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"a.org:1\"]",
                &format!("{GROUPS}errno_syscalls = [\"socket\"]\n"),
                "seccomp.errno_syscalls",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"a.org:1\"]",
                &format!("{GROUPS}errno_syscalls = [\"getpeername\"]\n"),
                "seccomp.errno_syscalls",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"a.org:1\"]\nenabled = true",
                GROUPS,
                "network.enabled",
            ),
            (
                "mode = \"allowlist\"\nallow = [\"a.org:1\"]\nmax_connections = 0",
                GROUPS,
                "network.max_connections",
            ),
            ("allow = [\"a.org:1\"]", GROUPS, "network.allow"),
            ("deny_is_stop = true", GROUPS, "network.allow"),
            ("mode = \"open\"", GROUPS, "network.mode"),
        ] {
            let e = load(net, seccomp).unwrap_err();
            assert!(e.contains(key), "{net}: {e}");
        }
    }
}
