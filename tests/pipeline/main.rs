//! One job through the whole pipeline (contract, check, plan, jail, supervise, record),
//! through the real binary: one test binary, each subject a module
//! (`cargo test --test pipeline -- MODULE::`).
//!
//! - `audit_log`: which files the audit log may be;
//! - `contract`: the action contract (no jail);
//! - `run_pipeline`: every stop reason, the seed's example and variants, the audit log;
//! - `files_artifacts`: files in, artifacts out;
//! - `job_view`: what a job sees from inside (its fds, the paths it may write);
//! - `judge_mode`: stdin and text output;
//! - `languages`: the compiled languages and bash (a compile jail, then the run jail);
//! - `results`: rich results a program writes itself stay bounded and typed;
//! - `hardening`: nothing around the jail trusts the agent;
//! - `cleanup`: nothing left behind, whatever way a run ends;
//! - `explain`: `agentjail explain`, tested by applying the edits it proposes.
//!
//! `cleanup` and `hardening` compare host-wide state before and after: they hold
//! `common::alone()`, and every launcher here holds `common::jail_running()`, so no other
//! test of this binary runs a jail meanwhile.

#[path = "../common/mod.rs"]
mod common;

mod audit_log;
mod cleanup;
mod contract;
mod explain;
mod files_artifacts;
mod hardening;
mod job_view;
mod judge_mode;
mod languages;
mod network_cred;
mod network_run;
mod results;
mod run_pipeline;
