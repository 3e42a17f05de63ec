//! `learn` as a server op (serve's `{"op": "learn", "actions": [...]}`): the policy
//! layer's learner (crate::policy::learn) over the server's own policy, each learning run a
//! jail started for it on the request's own thread.
//!
//! The base is always the policy the server was started with, never a path or a text from
//! the request: a client of the socket must not make the server read a host file of its
//! choosing (the base's text is quoted into the answer), and what it learns is what this
//! server would have to run to serve those actions, which is the reviewer's question. The
//! answer carries the learned text (the base plus the commented diff, as `agentjail learn`
//! writes it) and the evidence (`learn --json`'s object); nothing is applied to the server.
//!
//! The runs are as `agentjail learn`'s: the whole pipeline in observe mode, each in a jail of
//! its own (never a warm one: the candidate's plan is not the pool's), no cache, no audit
//! log. The caller's hang-up or the server's stop interrupts the run under way; the learner
//! is then told every further run was interrupted (no jail starts), and the request is
//! answered `unavailable`.

use super::{ClientStop, Engine, EngineError, ErrorCode};
use crate::pipeline::record::Recorder;
use crate::pipeline::source::{Acquired, JailSource, JobInputs};
use crate::policy::learn::{learn, LearnAction};
use crate::policy::{LoadedPolicy, Policy};
use crate::runner::Language;
use agentjail_jail::launch::Teardown;
use agentjail_jail::supervise::Interrupt;
use agentjail_jail::JailError;
use serde_json::{json, Value};

/// Most actions one learn request may name: each costs up to
/// `policy::learn::MAX_ROUNDS` + 2 runs and one per widened item.
pub const MAX_LEARN_ACTIONS: usize = 8;

/// The engine as the jail source of learning runs: every jail planned from the run's own
/// policy (the observe-mode candidate), started on the calling thread.
struct Learning<'a> {
    engine: &'a Engine,
    stop: Option<&'a ClientStop>,
}

impl JailSource for Learning<'_> {
    fn acquire(
        &self,
        policy: &Policy,
        language: Language,
        job: &JobInputs,
    ) -> Result<Acquired, JailError> {
        // Observe mode's plan differs from the pool's: always a jail built for the run, and
        // started here, as `agentjail run` starts one (no preloads, its runner's ready report
        // read by the run itself): a spawner thread would wait for that report before the
        // run holds the seccomp listener, while the runner's first observed open waits for
        // the listener's answer (each start then ran into the spawner's ready timeout). This
        // request's thread outlives the run, so the init's PDEATHSIG (pool.rs) never fires
        // early.
        crate::pipeline::source::start_cold(policy, language, job)
    }

    fn interrupt(&self) -> Option<Interrupt<'_>> {
        match self.stop {
            Some(s) => Some(s.interrupt()),
            None => self.engine.interrupt(),
        }
    }

    fn teardown(&self, t: Teardown) {
        Engine::teardown(self.engine, t);
    }
}

impl Engine {
    /// Learn the smallest policy over the server's own that lets `actions` run: `{"policy":
    /// TEXT, "evidence": {...}, "complete": bool}`.
    pub(crate) fn learn(
        &self,
        actions: &[Vec<u8>],
        stop: Option<&ClientStop>,
    ) -> Result<Value, EngineError> {
        if actions.is_empty() || actions.len() > MAX_LEARN_ACTIONS {
            return Err(EngineError::new(
                ErrorCode::BadRequest,
                format!(
                    "\"actions\" must list 1 to {MAX_LEARN_ACTIONS} action objects (got {})",
                    actions.len()
                ),
            ));
        }
        let read: Vec<LearnAction> = actions
            .iter()
            .enumerate()
            .map(|(i, raw)| LearnAction::new(raw.clone(), &format!("actions[{i}]")))
            .collect();
        let src = Learning { engine: self, stop };
        let mut interrupted: Option<String> = None;
        let mut runner = |p: &LoadedPolicy, raw: &[u8]| -> Value {
            if let Some(why) = &interrupted {
                // No further jail once the caller or the server stopped the request.
                return json!({"status": "stopped", "stop_reason": why});
            }
            let rec = crate::pipeline::job(Recorder::new(), raw, p, &src, None).value;
            if let Some(r) = rec["stop_reason"]
                .as_str()
                .filter(|r| r.starts_with("interrupted:"))
            {
                interrupted = Some(r.to_string());
            }
            rec
        };
        let result = learn(&self.policy, &read, &mut runner);
        if let Some(why) = interrupted {
            return Err(EngineError::new(
                ErrorCode::Unavailable,
                format!("learning stopped ({why}): the client or the server stopped it"),
            ));
        }
        let (learned, text) =
            result.map_err(|e| EngineError::new(ErrorCode::Unavailable, e.to_string()))?;
        Ok(json!({
            "policy": text,
            "evidence": serde_json::to_value(&learned).unwrap_or_default(),
            "complete": learned.complete(),
        }))
    }
}
