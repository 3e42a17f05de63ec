//! The decision for one destination: is `host:port` on the list, and which addresses may
//! the proxy connect to. The proxy connects to exactly the addresses returned here; it
//! never asks the resolver again (a name that resolves to a public address for the check
//! and a private one for the connect is DNS rebinding).

use crate::addr;
use crate::rules::{normalize, valid_name, Rules};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Name → addresses. The system's resolver in production, a table in tests.
pub trait Resolver: Send + Sync {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>>;
}

/// The host's resolver (getaddrinfo: /etc/hosts, then DNS), run in the supervisor, outside
/// the jail: the jail itself has no resolver to talk to.
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok((host, port).to_socket_addrs()?.map(|a| a.ip()).collect())
    }
}

/// A refused destination: the record's `reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied(pub String);

/// The addresses `host:port` may be reached at under `rules`, or why not. `host` is what
/// the program asked for (a name, or an IP literal, IPv6 with or without brackets).
pub fn decide(
    rules: &Rules,
    resolver: &dyn Resolver,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, Denied> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let literal = bare.parse::<IpAddr>().ok();
    let name = normalize(host);
    if literal.is_none() && !valid_name(&name) {
        return Err(Denied("invalid_host".into()));
    }
    if !rules.allow.iter().any(|a| a.admits(&name, literal, port)) {
        let why = if literal.is_some() {
            "ip_not_listed"
        } else {
            "not_allowlisted"
        };
        return Err(Denied(why.into()));
    }
    let ips = match literal {
        Some(ip) => vec![ip],
        None => resolver
            .resolve(&name, port)
            .map_err(|_| Denied("resolve_failed".into()))?,
    };
    if ips.is_empty() {
        return Err(Denied("resolve_failed".into()));
    }
    // Every address must pass, not just one: which one the connect would use is not ours
    // to predict, and a name with one public and one private address is the rebinding
    // pattern.
    for ip in &ips {
        if let Some(class) = addr::non_public(*ip) {
            if !rules.allow_private.iter().any(|c| c.contains(*ip)) {
                return Err(Denied(format!(
                    "non_public_address:{}:{class}",
                    addr::canonical(*ip)
                )));
            }
        }
    }
    Ok(ips
        .into_iter()
        .map(|ip| SocketAddr::new(addr::canonical(ip), port))
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::addr::Cidr;
    use crate::rules::Allow;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A resolver from a table; each lookup of a name pops its next answer (the last one
    /// repeats), so a test can make a name change its address between lookups.
    pub struct Fake(pub Mutex<HashMap<String, Vec<Vec<IpAddr>>>>, pub Mutex<u32>);

    impl Fake {
        pub fn new(entries: &[(&str, &[&str])]) -> Fake {
            let mut m: HashMap<String, Vec<Vec<IpAddr>>> = HashMap::new();
            for (name, ips) in entries {
                m.entry(name.to_string())
                    .or_default()
                    .push(ips.iter().map(|s| s.parse().unwrap()).collect());
            }
            Fake(Mutex::new(m), Mutex::new(0))
        }
        pub fn lookups(&self) -> u32 {
            *self.1.lock().unwrap()
        }
    }

    impl Resolver for Fake {
        fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
            *self.1.lock().unwrap() += 1;
            let mut m = self.0.lock().unwrap();
            match m.get_mut(host) {
                Some(answers) if answers.len() > 1 => Ok(answers.remove(0)),
                Some(answers) => Ok(answers[0].clone()),
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such name",
                )),
            }
        }
    }

    fn rules(allow: &[&str], private: &[&str]) -> Rules {
        Rules {
            allow: allow.iter().map(|s| Allow::parse(s).unwrap()).collect(),
            allow_private: private.iter().map(|s| Cidr::parse(s).unwrap()).collect(),
            ..Default::default()
        }
    }

    fn reason(r: Result<Vec<SocketAddr>, Denied>) -> String {
        r.unwrap_err().0
    }

    #[test]
    fn names_on_the_list_resolve_to_public_addresses() {
        let f = Fake::new(&[("pypi.org", &["151.101.0.223", "2a04:4e42::223"])]);
        let r = rules(&["pypi.org:443"], &[]);
        let got = decide(&r, &f, "PyPI.org.", 443).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], "151.101.0.223:443".parse().unwrap());
        assert_eq!(reason(decide(&r, &f, "pypi.org", 80)), "not_allowlisted");
        assert_eq!(
            reason(decide(&r, &f, "files.pythonhosted.org", 443)),
            "not_allowlisted"
        );
        assert_eq!(reason(decide(&r, &f, "bad host", 443)), "invalid_host");
    }

    #[test]
    fn private_metadata_and_loopback_answers_are_refused() {
        for (ip, class) in [
            ("169.254.169.254", "metadata"),
            ("127.0.0.1", "loopback"),
            ("10.0.0.5", "private"),
            ("::1", "loopback"),
            ("fd00::1", "unique local (private)"),
            ("::ffff:127.0.0.1", "loopback"),
        ] {
            let f = Fake::new(&[("api.example.com", &[ip])]);
            let r = rules(&["*.example.com:443"], &[]);
            let why = reason(decide(&r, &f, "api.example.com", 443));
            assert!(
                why.starts_with("non_public_address:") && why.ends_with(class),
                "{ip}: {why}"
            );
        }
    }

    #[test]
    fn one_private_answer_among_public_ones_refuses_the_name() {
        let f = Fake::new(&[("a.example.com", &["8.8.8.8", "10.1.1.1"])]);
        let r = rules(&["a.example.com:443"], &[]);
        assert!(
            reason(decide(&r, &f, "a.example.com", 443)).starts_with("non_public_address:10.1.1.1")
        );
    }

    #[test]
    fn allow_private_admits_only_its_ranges() {
        let f = Fake::new(&[
            ("index.test", &["127.0.0.1"]),
            ("other.test", &["127.0.0.2"]),
        ]);
        let r = rules(&["index.test:8080", "other.test:8080"], &["127.0.0.1/32"]);
        assert_eq!(
            decide(&r, &f, "index.test", 8080).unwrap()[0],
            "127.0.0.1:8080".parse().unwrap()
        );
        assert!(
            reason(decide(&r, &f, "other.test", 8080)).starts_with("non_public_address:127.0.0.2")
        );
    }

    #[test]
    fn bare_ips_only_when_listed() {
        let f = Fake::new(&[]);
        let r = rules(
            &[
                "pypi.org:443",
                "8.8.8.8:53",
                "[2606:4700::1111]:443",
                "10.0.0.1:80",
            ],
            &[],
        );
        assert_eq!(reason(decide(&r, &f, "1.1.1.1", 443)), "ip_not_listed");
        assert_eq!(
            reason(decide(&r, &f, "169.254.169.254", 80)),
            "ip_not_listed"
        );
        assert_eq!(reason(decide(&r, &f, "[::1]", 443)), "ip_not_listed");
        assert!(decide(&r, &f, "8.8.8.8", 53).is_ok());
        assert!(decide(&r, &f, "[2606:4700::1111]", 443).is_ok());
        assert!(decide(&r, &f, "2606:4700::1111", 443).is_ok());
        // Listed, but private and not in allow_private: both lists must agree.
        assert!(reason(decide(&r, &f, "10.0.0.1", 80)).starts_with("non_public_address:10.0.0.1"));
        assert_eq!(f.lookups(), 0, "an IP literal is never resolved");
    }

    #[test]
    fn resolver_failures_deny() {
        let f = Fake::new(&[("empty.example.com", &[])]);
        let r = rules(&["*.example.com:443"], &[]);
        assert_eq!(
            reason(decide(&r, &f, "missing.example.com", 443)),
            "resolve_failed"
        );
        assert_eq!(
            reason(decide(&r, &f, "empty.example.com", 443)),
            "resolve_failed"
        );
    }
}
