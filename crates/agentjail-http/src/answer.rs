//! What every handler does with its work and the engine's answer: run it on a job thread
//! within the job slots ([`blocking`]); count a record ([`answered`]), or stamp, audit and
//! count one the engine's methods returned ([`finish`]); and turn the engine's outcome into
//! the response ([`outcome_resp`]).

use crate::respond::{engine_error, error, json_resp, Resp};
use crate::state::{Caller, State};
use agentjail_engine::engine::{EngineError, Outcome};
use agentjail_engine::pipeline::record::Sealed;
use hyper::StatusCode;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// Run `f` on a job thread, at most `jobs` at once (waiting or running on tokio's blocking
/// threads).
pub async fn blocking<T: Send + 'static>(
    st: &Arc<State>,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Resp> {
    let unavailable = || {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "agentjail is shutting down",
        )
    };
    let slot = Arc::clone(&st.jobs)
        .acquire_owned()
        .await
        .map_err(|_| unavailable())?;
    // The slot goes with the job: if the client hangs up, the job still runs to its end
    // (and its record to the audit log), and no other job takes its slot meanwhile.
    tokio::task::spawn_blocking(move || {
        let answer = f();
        drop(slot);
        answer
    })
    .await
    .map_err(|_| unavailable())
}

/// A record the engine answered with (stamped and audited by Engine::handle): counted in
/// the metrics, and the refills held back for its jail may start.
pub fn answered(st: &State, record: &Sealed, started: Instant) {
    st.metrics
        .job(&record.stop_reason.to_string(), started.elapsed());
    st.engine.answered();
}

/// A record of the pod's workspace (crate::pod's runtime routes, which retry a
/// command on a new workspace when theirs ended and so call the engine's methods, not
/// Engine::handle): stamped, audited and counted here.
pub fn finish(st: &State, record: &mut Sealed, caller: &Caller, started: Instant) {
    let who = caller.value();
    if who.as_object().is_some_and(|o| !o.is_empty()) {
        record.set_caller(who, true);
    }
    agentjail_engine::pipeline::audit::append(st.audit.as_deref(), record);
    answered(st, record, started);
}

/// HTTP's one table from the engine's outcome to a response: 200 with the record (counted:
/// [`answered`]), the decision, the new id, the files, whether closed; or the engine's
/// refusal with its status (crate::status).
pub fn outcome_resp(st: &State, outcome: Result<Outcome, EngineError>, started: Instant) -> Resp {
    let v = match outcome {
        Ok(Outcome::Record(rec)) => {
            answered(st, &rec, started);
            // The answer's copy only: the audit log's was written by the engine.
            let mut v = rec.value;
            agentjail_engine::policy::explain::add_hint(&mut v, &st.engine.policy().policy);
            v
        }
        Ok(Outcome::Decision(decision, _)) => decision,
        Ok(Outcome::Session(id)) => json!({ "session": id }),
        Ok(Outcome::Workspace(id)) => json!({ "workspace": id }),
        Ok(Outcome::Closed(closed)) => json!({ "closed": closed }),
        Ok(Outcome::Files(files)) => json!({ "files": files }),
        Ok(Outcome::Answer(key, answer)) => json!({ key: answer }),
        Ok(Outcome::Stats(stats)) => stats,
        Err(e) => return engine_error(e),
    };
    json_resp(StatusCode::OK, &v)
}
