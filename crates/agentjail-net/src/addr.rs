//! Which addresses the proxy refuses unless the rules list them (`allow_private`): every
//! address that is not the public internet.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address range, `10.0.0.0/8`, `fd00::/8` or one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

/// Why a string is not a [`Cidr`]; each variant holds the string as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CidrError {
    /// The part before `/` is not an IPv4 or IPv6 address.
    NotAnAddress(String),
    /// The prefix length is not a number in `0..=max` (32 for IPv4, 128 for IPv6).
    Prefix { input: String, max: u8 },
}

impl std::fmt::Display for CidrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CidrError::NotAnAddress(s) => write!(f, "{s:?} is not an IP address or CIDR range"),
            CidrError::Prefix { input, max } => {
                write!(f, "{input:?}: the prefix length must be 0..={max}")
            }
        }
    }
}

impl std::error::Error for CidrError {}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, CidrError> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| CidrError::NotAnAddress(s.into()))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => {
                p.parse::<u8>()
                    .ok()
                    .filter(|n| *n <= max)
                    .ok_or_else(|| CidrError::Prefix {
                        input: s.into(),
                        max,
                    })?
            }
        };
        Ok(Cidr { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let bits = bits as usize;
    let (full, rest) = (bits / 8, bits % 8);
    if a[..full] != b[..full] {
        return false;
    }
    rest == 0 || (a[full] ^ b[full]) >> (8 - rest) == 0
}

/// An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is the IPv4 address it maps.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Why `ip` is not a public internet address, or None when it is.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    let r = match o {
        // The clouds' instance metadata (and Azure's WireServer, which hands out agent
        // configuration and certificates).
        [169, 254, 169, 254] | [168, 63, 129, 16] => "metadata",
        [0, ..] => "unspecified",
        [127, ..] => "loopback",
        [10, ..] => "private",
        [172, b, ..] if (16..32).contains(&b) => "private",
        [192, 168, ..] => "private",
        [100, b, ..] if (64..128).contains(&b) => "shared (CGNAT)",
        [169, 254, ..] => "link-local",
        [192, 0, 0, _] => "IETF protocol assignments",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "documentation",
        [198, 18 | 19, ..] => "benchmarking",
        [a, ..] if a >= 224 => "multicast or reserved",
        _ => return None,
    };
    Some(r)
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let r = if ip.is_unspecified() {
        "unspecified"
    } else if ip.is_loopback() {
        "loopback"
    } else if s[0] & 0xffc0 == 0xfe80 {
        "link-local"
    } else if s[0] & 0xfe00 == 0xfc00 {
        "unique local (private)"
    } else if s[0] & 0xff00 == 0xff00 {
        "multicast"
    } else if s[0] == 0x64 && s[1] == 0xff9b {
        // NAT64 reaches an IPv4 address of the translator's choosing.
        "NAT64"
    } else if s[0] == 0x2002 {
        "6to4"
    } else if s[0] == 0x2001 && s[1] == 0 {
        // Teredo: the tunnel's relay reaches an IPv4 address embedded in the address.
        "Teredo"
    } else if s[..4] == [0; 4] && s[4] == 0xffff && s[5] == 0 {
        // ::ffff:0:a.b.c.d (IPv4-translated, SIIT): an IPv4 address of the translator's.
        "IPv4-translated"
    } else if s[0] == 0x100 && s[1..4] == [0; 3] {
        "discard"
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        "documentation"
    } else if s[0] == 0xfec0 {
        "site-local"
    } else if s[..6] == [0; 6] {
        // ::a.b.c.d (IPv4-compatible, deprecated): never the public internet.
        "IPv4-compatible"
    } else {
        return None;
    };
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn refused_ranges() {
        for (a, why) in [
            ("169.254.169.254", "metadata"),
            ("168.63.129.16", "metadata"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
            ("::ffff:0:a00:1", "IPv4-translated"),
            ("::ffff:0:808:808", "IPv4-translated"),
            ("100::1", "discard"),
            ("100::ffff:1:2:3", "discard"),
            ("169.254.1.1", "link-local"),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared (CGNAT)"),
            ("100.127.255.255", "shared (CGNAT)"),
            ("224.0.0.1", "multicast or reserved"),
            ("255.255.255.255", "multicast or reserved"),
            ("192.0.0.8", "IETF protocol assignments"),
            ("198.18.0.1", "benchmarking"),
            ("192.0.2.1", "documentation"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::1", "link-local"),
            ("fd00::1", "unique local (private)"),
            ("fc00::1", "unique local (private)"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "metadata"),
            ("64:ff9b::a9fe:a9fe", "NAT64"),
            ("2002:a9fe:a9fe::1", "6to4"),
            ("2001:db8::1", "documentation"),
            ("fec0::1", "site-local"),
            ("::7f00:1", "IPv4-compatible"),
        ] {
            assert_eq!(non_public(ip(a)), Some(why), "{a}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for a in [
            "151.101.0.223",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.0.1",
            "100.128.0.1",
            "8.8.8.8",
            "2a04:4e42::223",
            "2606:4700::1111",
            "223.255.255.255",
            "168.63.129.17",
            "2001:4860:4860::8888",
            "100:0:0:1::1",
        ] {
            assert_eq!(non_public(ip(a)), None, "{a}");
        }
    }

    #[test]
    fn cidr() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.9.9.9")));
        assert!(!c.contains(ip("11.0.0.0")));
        assert!(
            c.contains(ip("::ffff:10.0.0.1")),
            "mapped addresses are their IPv4"
        );
        let c = Cidr::parse("127.0.0.1").unwrap();
        assert!(c.contains(ip("127.0.0.1")) && !c.contains(ip("127.0.0.2")));
        let c = Cidr::parse("fd00::/8").unwrap();
        assert!(c.contains(ip("fdab::1")) && !c.contains(ip("fe00::1")));
        let c = Cidr::parse("172.16.0.0/12").unwrap();
        assert!(c.contains(ip("172.31.0.1")) && !c.contains(ip("172.32.0.1")));
        assert!(Cidr::parse("[::1]").unwrap().contains(ip("::1")));
        assert!(!Cidr::parse("0.0.0.0/0").unwrap().contains(ip("::1")));
        for bad in ["10.0.0.0/33", "::/129", "example.com", "10.0.0.0/x", ""] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }
}
