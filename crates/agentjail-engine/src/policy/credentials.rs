//! `[[network.credentials]]`: secrets the allowlist's proxy injects as a header for one host,
//! so the program can call an API without ever holding the key (crates/agentjail-net's
//! `broker`). Each value is read once, when the policy loads, from a file the operator owns
//! (crate::hostpath::read_operator_file: no symlink, root's or ours, not writable by others);
//! the loaded policy holds the values for the proxy and for redaction, and never prints them.

use super::invalid::{invalid, invalid_item, Invalid};
use super::Policy;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where a brokered request goes from the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Upstream {
    /// TLS to the host, its certificate verified against `network.ca_file` (or the system
    /// bundle) and its name against `host`.
    #[default]
    Https,
    /// Plain HTTP (an internal service the operator reaches without TLS).
    Http,
}

/// One `[[network.credentials]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    /// Its name in the record (`network.requests[].credential`) and in redaction markers.
    pub name: String,
    /// The host it is for; the allowlist must admit `host:port`.
    pub host: String,
    /// The upstream's port: 443 for https, 80 for http when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The header it is sent as.
    #[serde(default = "authorization")]
    pub header: String,
    /// The file holding the secret (absolute; one trailing newline is dropped).
    pub value_file: String,
    /// The header's value, `{}` standing for the secret (`"Bearer {}"`).
    #[serde(default = "bare")]
    pub format: String,
    #[serde(default)]
    pub upstream: Upstream,
}

fn authorization() -> String {
    "Authorization".into()
}

fn bare() -> String {
    "{}".into()
}

/// A loaded secret: its credential's name and the value as read (what redaction looks for).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    pub name: String,
    pub value: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({}, <secret>)", self.name)
    }
}

/// Largest secret file read.
pub const MAX_SECRET_BYTES: u64 = 8 * 1024;
/// Shortest secret accepted: redaction replaces every occurrence of the value in the
/// record, and a shorter one would match ordinary text.
pub const MIN_SECRET_CHARS: usize = 8;
/// Largest CA bundle read (the system's is about 220 KB).
pub const MAX_CA_BYTES: u64 = 4 << 20;
/// The trust roots when `network.ca_file` is not given (Debian's ca-certificates).
pub const SYSTEM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Headers a credential may not be sent as: the request's framing and routing, which the
/// proxy writes itself.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "proxy-connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "proxy-authorization",
];

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Visible ASCII and spaces only: nothing that could end a header line or hide in one.
fn header_safe(s: &str) -> bool {
    s.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// The entries' own checks (no file is read here).
pub(super) fn validate(p: &Policy) -> Result<(), Invalid> {
    let n = &p.network;
    let key = "network.credentials";
    if !n.allowlist() && (!n.credentials.is_empty() || n.ca_file.is_some()) {
        return Err(invalid(
            key,
            "credentials and ca_file apply to mode = \"allowlist\" only",
            "set network.mode = \"allowlist\", or remove them",
        ));
    }
    let rules = agentjail_net::Rules::parse_allow(&n.allow).unwrap_or_default();
    for (i, c) in n.credentials.iter().enumerate() {
        entry(c, &n.credentials[..i], &rules)?;
    }
    let tls = n.credentials.iter().any(|c| c.upstream == Upstream::Https);
    if n.ca_file.is_some() && !tls {
        return Err(invalid(
            "network.ca_file",
            "ca_file applies to credentials with upstream = \"https\" only",
            "remove it, or give a credential an https upstream",
        ));
    }
    Ok(())
}

/// One entry, after the `earlier` ones, against the allowlist's entries.
fn entry(
    c: &Credential,
    earlier: &[Credential],
    rules: &[agentjail_net::rules::Allow],
) -> Result<(), Invalid> {
    let item = |m: String, hint: &str| invalid_item("network.credentials", &c.name, m, hint);
    let name_ok = !c.name.is_empty()
        && c.name.len() <= 64
        && c.name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(item(
            format!("name {:?} is not 1-64 letters, digits, _ or -", c.name),
            "name it like api_example",
        ));
    }
    let host = agentjail_net::rules::normalize(&c.host);
    if !agentjail_net::rules::valid_name(&host) || host.parse::<std::net::IpAddr>().is_ok() {
        return Err(item(
            format!("host {:?} is not a host name", c.host),
            "write the API's host name (api.example.com), no port, no wildcard",
        ));
    }
    if earlier.iter().any(|e| e.name == c.name) {
        return Err(item(format!("{:?} is named twice", c.name), "rename one"));
    }
    if earlier
        .iter()
        .any(|e| agentjail_net::rules::normalize(&e.host) == host)
    {
        return Err(item(
            format!("{host} has two credentials"),
            "one credential per host",
        ));
    }
    let port = c.port();
    if port == 0 {
        return Err(item("port 0".into(), "give the upstream's port, 1..=65535"));
    }
    if !rules.iter().any(|a| a.admits(&host, None, port)) {
        return Err(item(
            format!("{host}:{port} is not in network.allow"),
            &format!("add \"{host}:{port}\" to network.allow"),
        ));
    }
    if !is_token(&c.header)
        || RESERVED_HEADERS
            .iter()
            .any(|h| c.header.eq_ignore_ascii_case(h))
    {
        return Err(item(
            format!("header {:?} cannot carry a credential", c.header),
            "name an ordinary header (Authorization, X-Api-Key)",
        ));
    }
    if c.format.matches("{}").count() != 1 || !header_safe(&c.format) {
        return Err(item(
            format!(
                "format {:?} must hold `{{}}` once, in printable ASCII",
                c.format
            ),
            "write e.g. \"Bearer {}\" or \"{}\"",
        ));
    }
    if !Path::new(&c.value_file).is_absolute() {
        return Err(item(
            format!("value_file {:?} is not an absolute path", c.value_file),
            "name the file by its absolute path",
        ));
    }
    Ok(())
}

impl Credential {
    /// The upstream port: given, or the scheme's.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(match self.upstream {
            Upstream::Https => 443,
            Upstream::Http => 80,
        })
    }
}

/// The secret in `bytes` (a file's content): one trailing newline (`\n` or `\r\n`) dropped;
/// printable ASCII, at least [`MIN_SECRET_CHARS`].
fn secret_value(bytes: &[u8]) -> Result<String, String> {
    let b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let b = if bytes.ends_with(b"\n") {
        b.strip_suffix(b"\r").unwrap_or(b)
    } else {
        b
    };
    let s = std::str::from_utf8(b).map_err(|_| "is not text".to_string())?;
    if !header_safe(s) {
        return Err(
            "holds a character a header cannot carry (a control character, a second line or non-ASCII)"
                .into(),
        );
    }
    if s.trim().len() < MIN_SECRET_CHARS {
        return Err(format!(
            "holds fewer than {MIN_SECRET_CHARS} characters: too short to redact safely"
        ));
    }
    Ok(s.to_string())
}

/// Read every credential's file (and the trust roots for https upstreams) into the policy:
/// `network.broker` for the proxy, `redaction.secrets` for the record. Called once per
/// load, after validation.
pub(super) fn load(p: &mut Policy) -> Result<(), Invalid> {
    let key = "network.credentials";
    let mut creds = Vec::new();
    let mut secrets = Vec::new();
    for c in &p.network.credentials {
        let what = format!("credential {} value_file", c.name);
        let bytes = crate::hostpath::read_operator_secret(
            Path::new(&c.value_file),
            &what,
            MAX_SECRET_BYTES,
        )
        .map_err(|m| invalid_item(key, &c.name, m.to_string(), "keep the secret in a regular file of root's or agentjail's user, mode 0600 or 0400"))?;
        let value = secret_value(&bytes).map_err(|m| {
            invalid_item(
                key,
                &c.name,
                format!("{what} {}: {m}", c.value_file),
                "write the secret alone on one line",
            )
        })?;
        creds.push(agentjail_net::Credential {
            name: c.name.clone(),
            host: agentjail_net::rules::normalize(&c.host),
            port: c.port(),
            header: c.header.clone(),
            value: c.format.replacen("{}", &value, 1),
            tls: c.upstream == Upstream::Https,
        });
        secrets.push(Secret {
            name: c.name.clone(),
            value,
        });
    }
    let tls = if creds.iter().any(|c| c.tls) {
        let file = p.network.ca_file.as_deref().unwrap_or(SYSTEM_CA_FILE);
        let pem = crate::hostpath::read_operator_file(Path::new(file), "ca_file", MAX_CA_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|pem| {
                agentjail_net::Tls::from_pem(&pem).map_err(|m| format!("ca_file: {file}: {m}"))
            })
            .map_err(|m| {
                invalid(
                    "network.ca_file",
                    m,
                    "name a PEM bundle of the CA certificates the upstreams are verified against",
                )
            })?;
        Some(pem)
    } else {
        None
    };
    p.network.broker = agentjail_net::Broker {
        credentials: creds,
        tls,
    };
    p.redaction.secrets = secrets;
    Ok(())
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
