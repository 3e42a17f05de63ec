//! Credential brokering: for a host a policy names, a plain-HTTP request from the program
//! (absolute form, `http://host/...`) leaves the proxy with a secret header the program
//! never held, over TLS to the real host (or plain HTTP where the policy says the upstream
//! is plain). The secret values come from files the engine crate reads and checks when the
//! policy loads; this module only holds them, matches requests to them and makes the
//! upstream TLS connection (rustls, ring, certificate and name verification always on).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::net::TcpStream;
use std::sync::Arc;

/// One brokered credential.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The policy's name for it: the record's `credential`.
    pub name: String,
    /// The host it is for (normalised: lower case, no trailing dot).
    pub host: String,
    /// The upstream port the request goes to.
    pub port: u16,
    /// The header it is sent as (a token; the program's own header of that name is dropped).
    pub header: String,
    /// The header's whole value (`format` applied to the secret). Never logged.
    pub value: String,
    /// TLS to the upstream (`upstream = "https"`), or plain HTTP.
    pub tls: bool,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("header", &self.header)
            .field("value", &"<secret>")
            .field("tls", &self.tls)
            .finish()
    }
}

impl Credential {
    /// Whether a plain-HTTP request to `host` (normalised) on `port` (as its URL says, 80
    /// when it names none) is for this credential: the host, on port 80 or on the
    /// credential's own port.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        self.host == host && (port == 80 || port == self.port)
    }

    /// The `Host` header the upstream gets: the port only when it is not the scheme's.
    pub fn authority(&self) -> String {
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The upstream TLS client's configuration: the trust roots, built once.
#[derive(Clone)]
pub struct Tls(pub Arc<ClientConfig>);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl PartialEq for Tls {
    fn eq(&self, other: &Tls) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for Tls {}

/// Why the TLS client could not be built or the upstream handshake failed. `Display` is
/// the record's reason (rustls's own wording).
#[derive(Debug)]
pub enum TlsError {
    /// The bundle is not PEM.
    Pem(rustls::pki_types::pem::Error),
    /// The bundle holds no certificate the verifier can use.
    NoUsableCa,
    /// rustls refused the configuration.
    Config(rustls::Error),
    /// The host is not a name a certificate can be checked against.
    ServerName(rustls::pki_types::InvalidDnsNameError),
    /// rustls refused to start the connection.
    Connection(rustls::Error),
    /// The handshake failed.
    Handshake(std::io::Error),
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsError::Pem(e) => write!(f, "not a PEM certificate bundle: {e}"),
            TlsError::NoUsableCa => f.write_str("holds no usable CA certificate"),
            TlsError::Config(e) | TlsError::Connection(e) => write!(f, "{e}"),
            TlsError::ServerName(e) => write!(f, "{e}"),
            TlsError::Handshake(e) => f.write_str(&tls_error(e)),
        }
    }
}

impl std::error::Error for TlsError {}

impl Tls {
    /// A client that trusts the certificates of the PEM bundle `pem` (and nothing else):
    /// TLS 1.2 and 1.3, ring's algorithms, no client certificate. Err when the bundle
    /// holds no certificate the verifier can use.
    pub fn from_pem(pem: &[u8]) -> Result<Tls, TlsError> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .map_err(TlsError::Pem)?;
        let mut roots = RootCertStore::empty();
        let (added, _ignored) = roots.add_parsable_certificates(certs);
        if added == 0 {
            return Err(TlsError::NoUsableCa);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls(Arc::new(cfg)))
    }

    /// The handshake with `host` over `sock`, certificate and name verified: the stream to
    /// write the request to and read the response from. Err: the handshake's error, in
    /// words (the record's reason).
    pub fn connect(
        &self,
        host: &str,
        mut sock: TcpStream,
    ) -> Result<StreamOwned<ClientConnection, TcpStream>, TlsError> {
        let name = ServerName::try_from(host.to_string()).map_err(TlsError::ServerName)?;
        let mut conn = ClientConnection::new(self.0.clone(), name).map_err(TlsError::Connection)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(TlsError::Handshake)?;
        }
        Ok(StreamOwned::new(conn, sock))
    }
}

/// A handshake error in a few words (rustls's own wording, whitespace flattened).
fn tls_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The credentials of a run, and the TLS client when one of them needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Broker {
    pub credentials: Vec<Credential>,
    pub tls: Option<Tls>,
}

impl Broker {
    /// The credential for a plain-HTTP request to `host` (normalised) on `port`.
    pub fn find(&self, host: &str, port: u16) -> Option<&Credential> {
        self.credentials.iter().find(|c| c.matches(host, port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(tls: bool, port: u16) -> Credential {
        Credential {
            name: "api".into(),
            host: "api.test".into(),
            port,
            header: "Authorization".into(),
            value: "Bearer s3cret-value".into(),
            tls,
        }
    }

    #[test]
    fn a_credential_matches_its_host_on_80_or_its_port() {
        let b = Broker {
            credentials: vec![cred(true, 443)],
            tls: None,
        };
        assert!(b.find("api.test", 80).is_some());
        assert!(b.find("api.test", 443).is_some());
        assert!(b.find("api.test", 8080).is_none());
        assert!(b.find("other.test", 80).is_none());
        assert!(b.find("api.test.evil", 80).is_none());
    }

    #[test]
    fn the_upstream_host_header_names_a_port_only_when_it_is_not_the_schemes() {
        assert_eq!(cred(true, 443).authority(), "api.test");
        assert_eq!(cred(false, 80).authority(), "api.test");
        assert_eq!(cred(true, 8443).authority(), "api.test:8443");
        assert_eq!(cred(false, 443).authority(), "api.test:443");
    }

    #[test]
    fn debug_never_prints_the_value() {
        let d = format!("{:?}", cred(true, 443));
        assert!(!d.contains("s3cret") && d.contains("<secret>"), "{d}");
    }

    #[test]
    fn bundles_without_a_usable_certificate_are_refused() {
        assert!(Tls::from_pem(b"").is_err());
        assert!(Tls::from_pem(b"not pem at all").is_err());
        let junk = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(Tls::from_pem(junk).is_err());
        let broken = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        assert!(Tls::from_pem(broken).is_err());
    }

    #[test]
    fn a_host_that_is_no_server_name_is_refused_before_any_byte() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let tls = Tls::from_pem(&crate::test_tls::ca().0).unwrap();
        assert!(tls.connect("not a name!", sock).is_err());
        let (mut peer, _) = l.accept().unwrap();
        let mut b = [0u8; 1];
        use std::io::Read;
        assert_eq!(peer.read(&mut b).unwrap(), 0, "nothing was sent");
    }

    #[test]
    fn tls_configs_are_equal_only_to_themselves() {
        let pem = crate::test_tls::ca().0;
        let a = Tls::from_pem(&pem).unwrap();
        let b = Tls::from_pem(&pem).unwrap();
        assert_eq!(a, a.clone());
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "Tls");
    }
}
