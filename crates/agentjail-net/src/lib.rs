//! The network allowlist of agentjail (`[network] mode = "allowlist"`).
//!
//! The jail has its own, empty network namespace; its loopback has one listening socket,
//! made by the jail's setup and held by the supervisor, which runs [`proxy::Proxy`] on it.
//! The program reaches the network only through that proxy (`HTTP_PROXY`/`HTTPS_PROXY`
//! point at it): HTTP `CONNECT` to an allowed host and port, whose first bytes must be a
//! TLS ClientHello naming the same host (SNI), or, when the rules allow plain HTTP, an
//! absolute-form request whose `Host` header names the URL's host. The proxy resolves the
//! name itself, refuses private, loopback, link-local and metadata addresses unless the
//! rules list them, connects to the very address it checked (no second lookup: DNS
//! rebinding), counts bytes and stops at the limits. Every request is logged.
//!
//! For a host with a brokered credential ([`broker`]), a plain-HTTP request gets the secret
//! header the program never held and goes upstream over TLS (rustls) or plain HTTP.
//!
//! std and rustls only: no async runtime, no HTTP library. The parsers read a request head
//! and TLS record headers and nothing more: after the decision a plain request's body and
//! response are relayed as bytes, and a tunnel's TLS records as they come, each header
//! checked, each body forwarded unread.

pub mod addr;
pub mod broker;
pub mod decide;
pub mod proxy;
pub mod rules;
pub mod wire;

#[cfg(test)]
mod test_tls;

pub use broker::{Broker, Credential, Tls, TlsError};
pub use decide::{Resolver, SystemResolver};
pub use proxy::{Entry, OnDeny, Proxy, Report};
pub use rules::{Limits, Rules};
