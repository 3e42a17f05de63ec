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
//! - `judge_corpus`: the benign judge corpus (tests/corpus/judge/) in every language;
//! - `lang_attacks`, `lang_compile_attacks` (programs in `lang_programs`): attacks per
//!   language, on the run jail and on the compile jail, and between jobs;
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
mod compile_cache;
mod contract;
mod explain;
mod files_artifacts;
mod hardening;
mod job_view;
mod judge_corpus;
mod judge_mode;
mod lang_attacks;
mod lang_compile_attacks;
mod lang_programs;
mod languages;
mod network_cred;
mod network_run;
mod results;
mod run_pipeline;
