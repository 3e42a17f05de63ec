//! agentjail: the execution boundary for code an AI agent wrote.
//!
//! contract → policy → check → plan → jail → supervise → validate → record.

pub mod check;
pub mod cli;
pub mod contract;
pub mod doctor;
pub mod jail;
pub mod output;
pub mod plan;
pub mod policy;
pub mod record;
pub mod run;
pub mod supervise;
