//! The allowlist as the proxy holds it: host patterns with their ports, the private ranges
//! it may still reach, the limits. Built from a policy's `[network]` table by the main
//! crate, which reports [`Rules::parse_allow`]'s errors as policy errors.

use crate::addr::{Cidr, CidrError};
use std::net::IpAddr;
use std::time::Duration;

/// What an `allow` entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// One host name, lower case, no trailing dot.
    Name(String),
    /// `*.example.com`: any name ending in `.example.com` (not `example.com` itself).
    Suffix(String),
    /// A bare IP address: reachable only because it is listed.
    Ip(IpAddr),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allow {
    pub host: Host,
    pub port: u16,
}

/// Per-run limits; every one is counted over the whole run (all connections together).
/// A session's or a workspace's proxy lives across calls: its connections and requests
/// count from the last [`crate::Proxy::drain`] when `per_drain` is set, over its whole life
/// otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub connections: u32,
    pub requests: u32,
    /// `connections` and `requests` start again at each drain (each call's or command's
    /// record): the policy's `connection_budget = "command"`.
    pub per_drain: bool,
    /// A read that waits longer than this ends the transfer (slow peers, stalled clients).
    pub idle: Duration,
    /// The upstream connect, and the request head or ClientHello from the program.
    pub connect: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            bytes_in: 64 << 20,
            bytes_out: 1 << 20,
            connections: 32,
            requests: 64,
            per_drain: false,
            idle: Duration::from_secs(30),
            connect: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    pub allow: Vec<Allow>,
    pub allow_private: Vec<Cidr>,
    pub allow_http: bool,
    pub limits: Limits,
    /// The credentials the proxy injects (crate::broker); empty: none.
    pub broker: crate::broker::Broker,
}

/// A host name as the proxy compares it: lower case, without one trailing dot.
pub fn normalize(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// Letters, digits, `-` and `_` in dot-separated labels of 1..=63, 253 at most.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Why an `allow` entry (or a `host:port`) was refused; each variant holds the entry as
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowError {
    /// `[` without the `]:port` that ends an IPv6 address.
    Bracket(String),
    /// No `:port`.
    NoPort(String),
    /// The port is not a number in 1..=65535.
    Port(String),
    /// Between the brackets is not an IPv6 address.
    NotIpv6(String),
    /// `*` other than as a leading `*.` before a domain of two labels or more.
    Wildcard(String),
    /// The host is not a valid name.
    NotHostName(String),
}

impl std::fmt::Display for AllowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllowError::Bracket(s) => write!(f, "{s:?}: write an IPv6 address as [addr]:port"),
            AllowError::NoPort(s) => write!(f, "{s:?} has no port: write host:port"),
            AllowError::Port(s) => write!(f, "{s:?}: the port must be 1..=65535"),
            AllowError::NotIpv6(s) => write!(f, "{s:?}: not an IPv6 address"),
            AllowError::Wildcard(s) => write!(
                f,
                "{s:?}: a wildcard is `*.` before a domain of two labels or more (*.example.com)"
            ),
            AllowError::NotHostName(s) => write!(
                f,
                "{s:?} is not a host name (letters, digits, -, . only; * only as a leading `*.`)"
            ),
        }
    }
}

impl std::error::Error for AllowError {}

/// Split `host:port` (`[v6]:port` for IPv6). The port is required.
pub fn split_host_port(s: &str) -> Result<(&str, u16), AllowError> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest
            .split_once("]:")
            .ok_or_else(|| AllowError::Bracket(s.into()))?;
        (h, p)
    } else {
        s.rsplit_once(':')
            .ok_or_else(|| AllowError::NoPort(s.into()))?
    };
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| AllowError::Port(s.into()))?;
    Ok((host, port))
}

impl Allow {
    pub fn parse(s: &str) -> Result<Allow, AllowError> {
        let (host, port) = split_host_port(s)?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(Allow {
                host: Host::Ip(ip),
                port,
            });
        }
        if s.starts_with('[') {
            return Err(AllowError::NotIpv6(s.into()));
        }
        let name = normalize(host);
        let host = match name.strip_prefix("*.") {
            Some(suffix) if valid_name(suffix) && suffix.contains('.') => {
                Host::Suffix(suffix.into())
            }
            Some(_) => return Err(AllowError::Wildcard(s.into())),
            None if valid_name(&name) => Host::Name(name),
            None => return Err(AllowError::NotHostName(s.into())),
        };
        Ok(Allow { host, port })
    }

    /// Whether this entry admits `host` (normalised) on `port`.
    pub fn admits(&self, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
        if port != self.port {
            return false;
        }
        match (&self.host, ip) {
            (Host::Ip(listed), Some(ip)) => {
                crate::addr::canonical(*listed) == crate::addr::canonical(ip)
            }
            (Host::Ip(_), None) => false,
            (_, Some(_)) => false,
            (Host::Name(n), None) => n == host,
            (Host::Suffix(s), None) => {
                host.len() > s.len() + 1
                    && host.ends_with(s.as_str())
                    && host.as_bytes()[host.len() - s.len() - 1] == b'.'
            }
        }
    }
}

impl Rules {
    /// The entries of a policy's `allow` list, each checked.
    pub fn parse_allow(list: &[String]) -> Result<Vec<Allow>, AllowError> {
        list.iter().map(|s| Allow::parse(s)).collect()
    }

    pub fn parse_private(list: &[String]) -> Result<Vec<Cidr>, CidrError> {
        list.iter().map(|s| Cidr::parse(s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_entries() {
        assert_eq!(
            Allow::parse("PyPI.org.:443").unwrap(),
            Allow {
                host: Host::Name("pypi.org".into()),
                port: 443
            }
        );
        assert_eq!(
            Allow::parse("*.example.com:8443").unwrap().host,
            Host::Suffix("example.com".into())
        );
        assert_eq!(
            Allow::parse("[::1]:80").unwrap().host,
            Host::Ip("::1".parse().unwrap())
        );
        assert_eq!(
            Allow::parse("10.0.0.1:80").unwrap().host,
            Host::Ip("10.0.0.1".parse().unwrap())
        );
        for bad in [
            "pypi.org",
            "pypi.org:0",
            "pypi.org:70000",
            "pypi.org:x",
            "*:443",
            "*.com:443",
            "a.*.com:443",
            "-a.com:443",
            "a..com:443",
            ":443",
            "[::1:80",
            "[nothost]:80",
            "exa mple.com:443",
            "a/b.com:443",
            "*example.com:443",
        ] {
            assert!(Allow::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matching() {
        let exact = Allow::parse("pypi.org:443").unwrap();
        assert!(exact.admits("pypi.org", None, 443));
        assert!(!exact.admits("pypi.org", None, 80));
        assert!(!exact.admits("evilpypi.org", None, 443));
        assert!(!exact.admits("pypi.org.evil.com", None, 443));
        let wild = Allow::parse("*.example.com:443").unwrap();
        assert!(wild.admits("a.example.com", None, 443));
        assert!(wild.admits("a.b.example.com", None, 443));
        assert!(!wild.admits("example.com", None, 443));
        assert!(!wild.admits("badexample.com", None, 443));
        assert!(!wild.admits(".example.com", None, 443));
        let ip = Allow::parse("10.0.0.1:80").unwrap();
        assert!(ip.admits("10.0.0.1", Some("10.0.0.1".parse().unwrap()), 80));
        assert!(ip.admits("", Some("::ffff:10.0.0.1".parse().unwrap()), 80));
        assert!(
            !ip.admits("10.0.0.1", None, 80),
            "a name never matches an IP entry"
        );
        assert!(!exact.admits("1.2.3.4", Some("1.2.3.4".parse().unwrap()), 443));
    }

    #[test]
    fn error_text() {
        let text = |s: &str| Allow::parse(s).unwrap_err().to_string();
        assert_eq!(
            text("[::1:80"),
            r#""[::1:80": write an IPv6 address as [addr]:port"#
        );
        assert_eq!(
            text("pypi.org"),
            r#""pypi.org" has no port: write host:port"#
        );
        assert_eq!(text("a.com:0"), r#""a.com:0": the port must be 1..=65535"#);
        assert_eq!(text("[x]:80"), r#""[x]:80": not an IPv6 address"#);
        assert_eq!(
            text("*.com:1"),
            r#""*.com:1": a wildcard is `*.` before a domain of two labels or more (*.example.com)"#
        );
        assert_eq!(
            text("a b:1"),
            r#""a b:1" is not a host name (letters, digits, -, . only; * only as a leading `*.`)"#
        );
        let cidr = |s: &str| Cidr::parse(s).unwrap_err().to_string();
        assert_eq!(cidr("x"), r#""x" is not an IP address or CIDR range"#);
        assert_eq!(
            cidr("::/129"),
            r#""::/129": the prefix length must be 0..=128"#
        );
    }

    #[test]
    fn names() {
        assert!(valid_name("a-b.c_d.example"));
        assert!(!valid_name(&"a".repeat(64)));
        assert!(!valid_name(""));
        assert_eq!(normalize("Example.COM."), "example.com");
    }
}
