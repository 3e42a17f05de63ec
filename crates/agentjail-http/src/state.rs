//! What every request handler shares: the server's [`State`] (made once by crate::server)
//! and who called, [`Caller`] (made per request by crate::routes).

use crate::auth::Tokens;
use crate::metrics::Metrics;
use agentjail_engine::engine::Engine;
use agentjail_engine::pipeline::session::Owner;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

/// What every request handler shares.
pub struct State {
    pub engine: Arc<Engine>,
    pub tokens: Option<Tokens>,
    pub audit: Option<PathBuf>,
    pub metrics: Metrics,
    /// Job slots: a slot is held by the job itself (not by the request waiting for it), so
    /// a client that hangs up cannot free its slot while its job still runs.
    pub jobs: Arc<tokio::sync::Semaphore>,
    pub admitted: AtomicUsize,
    pub max_admitted: usize,
    pub connections: AtomicUsize,
    pub max_connections: usize,
    /// A connection number per caller (token name, or uid, or anonymous): a session belongs
    /// to its caller, not to one TCP connection.
    pub(crate) owners: Mutex<HashMap<String, u64>>,
    pub pod: String,
    /// With `--pod-workspace`: the workspace the runtime routes use.
    pub pod_workspace: Option<crate::pod::PodWorkspace>,
    pub unread: Arc<crate::unread::Unread>,
    /// The next connection's number for the engine's client stops (kept apart from the
    /// callers' session numbers in `owners`: see crate::server's CONNECTION_BASE).
    pub next_connection: std::sync::atomic::AtomicU64,
}

impl State {
    pub fn owner(&self, key: &str) -> Owner {
        let mut m = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.len() as u64 + 1;
        let connection = *m.entry(key.to_string()).or_insert(n);
        Owner {
            connection,
            uid: None,
        }
    }
}

/// Who called: the token's name (with tokens), the peer's uid (a unix socket), both or
/// neither (loopback without tokens).
#[derive(Clone)]
pub struct Caller {
    pub token: Option<String>,
    pub uid: Option<u32>,
    /// The connection's own stop (the engine's client stop): a job this connection runs
    /// ends with `interrupted:sighup` when the connection is gone, closed by the client or
    /// dropped for the unread budget (crate::server).
    pub stop: Option<Arc<agentjail_engine::engine::ClientStop>>,
}

impl Caller {
    /// Whether this caller can be told apart from another local user: a token, or a unix
    /// socket's peer uid. Tokenless TCP is every local user at once.
    pub fn identified(&self) -> bool {
        self.token.is_some() || self.uid.is_some()
    }

    /// Whose sessions these are: the token's, else the uid's (an anonymous caller has none:
    /// crate::routes::refuse_anonymous_state).
    pub fn key(&self) -> String {
        match (&self.token, self.uid) {
            (Some(t), _) => format!("token:{t}"),
            (None, Some(u)) => format!("uid:{u}"),
            (None, None) => "anonymous".into(),
        }
    }

    /// This caller as the engine's ([`agentjail_engine::engine::Engine::handle`]): `owner` for its
    /// sessions and workspaces, the peer's uid for a job's record, the connection's stop
    /// when `stop` (jobs; a session's or a workspace's call goes on), and the token's name
    /// and the uid stamped on each record, in the audit log's copy too.
    pub fn engine(&self, owner: Owner, stop: bool) -> agentjail_engine::engine::Caller<'_> {
        let who = self.value();
        let named = who
            .as_object()
            .is_some_and(|o| !o.is_empty())
            .then_some((who, true));
        agentjail_engine::engine::Caller {
            owner,
            uid: self.uid,
            stop: if stop { self.stop.as_deref() } else { None },
            named,
        }
    }

    pub(crate) fn value(&self) -> Value {
        let mut v = json!({});
        if let Some(t) = &self.token {
            v["token"] = json!(t);
        }
        if let Some(u) = self.uid {
            v["uid"] = json!(u);
        }
        v
    }
}
