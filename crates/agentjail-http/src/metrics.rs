//! `GET /metrics`: Prometheus' text exposition format (version 0.0.4).
//!
//! Counters kept here (jobs by stop reason, the job latency histogram, jail start failures,
//! refused requests) and gauges read from the engine's stats at scrape time (pools,
//! sessions). A stop reason is counted by its prefix (`code_runtime_error`, not
//! `code_runtime_error:1`), so the label set stays small whatever the programs do.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

#[derive(Default)]
pub struct Metrics {
    jobs: Mutex<BTreeMap<String, u64>>,
    /// Count per bucket (not cumulative; summed at scrape), then the +Inf overflow.
    buckets: Mutex<([u64; BUCKETS.len() + 1], f64)>,
    jail_start_failures: AtomicU64,
    pub refused_saturated: AtomicU64,
    pub refused_unauthorized: AtomicU64,
    pub refused_too_large: AtomicU64,
    /// Session and workspace routes over tokenless TCP (403).
    pub refused_anonymous: AtomicU64,
    pub bad_requests: AtomicU64,
}

/// The prefix of a stop reason: what the counters are labelled with.
fn prefix(stop_reason: &str) -> String {
    let p = stop_reason.split(':').next().unwrap_or("");
    p.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(64)
        .collect()
}

impl Metrics {
    /// A job or session call ended with `stop_reason` after `took`.
    pub fn job(&self, stop_reason: &str, took: Duration) {
        *self
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(prefix(stop_reason))
            .or_default() += 1;
        if stop_reason.starts_with("sandbox_unavailable") {
            self.jail_start_failures.fetch_add(1, Ordering::Relaxed);
        }
        let s = took.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(BUCKETS.len());
        let mut h = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        h.0[i] += 1;
        h.1 += s;
    }

    /// The exposition text; `stats` is the engine's (Engine::stats), `in_flight` the
    /// requests admitted now, `connections` the open connections.
    pub fn render(&self, stats: &Value, in_flight: usize, connections: usize) -> String {
        let mut o = String::new();
        o.push_str("# HELP agentjail_jobs_total Jobs and session calls answered, by stop reason (its prefix).\n# TYPE agentjail_jobs_total counter\n");
        for (k, v) in self.jobs.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = writeln!(o, "agentjail_jobs_total{{stop_reason=\"{k}\"}} {v}");
        }
        o.push_str("# HELP agentjail_job_duration_seconds Time from a job's admission to its record.\n# TYPE agentjail_job_duration_seconds histogram\n");
        let (counts, sum) = *self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let mut acc = 0;
        for (i, b) in BUCKETS.iter().enumerate() {
            acc += counts[i];
            let _ = writeln!(
                o,
                "agentjail_job_duration_seconds_bucket{{le=\"{b}\"}} {acc}"
            );
        }
        acc += counts[BUCKETS.len()];
        let _ = writeln!(
            o,
            "agentjail_job_duration_seconds_bucket{{le=\"+Inf\"}} {acc}\nagentjail_job_duration_seconds_sum {sum}\nagentjail_job_duration_seconds_count {acc}"
        );
        let counter = |o: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        };
        counter(
            &mut o,
            "agentjail_jail_start_failures_total",
            "Jobs whose jail could not be started (sandbox_unavailable).",
            self.jail_start_failures.load(Ordering::Relaxed),
        );
        o.push_str("# HELP agentjail_http_refused_total Requests refused before any work, by why.\n# TYPE agentjail_http_refused_total counter\n");
        for (why, c) in [
            ("saturated", &self.refused_saturated),
            ("unauthorized", &self.refused_unauthorized),
            ("too_large", &self.refused_too_large),
            ("unidentified", &self.refused_anonymous),
            ("bad_request", &self.bad_requests),
        ] {
            let _ = writeln!(
                o,
                "agentjail_http_refused_total{{why=\"{why}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        gauges(&mut o, stats, in_flight, connections);
        o
    }
}

/// The unread-response budget's lines (crate::unread).
pub fn unread(held: usize, budget: usize, dropped: u64) -> String {
    format!(
        "# HELP agentjail_http_unread_bytes Response bytes produced and not yet taken by their clients, over all connections.\n# TYPE agentjail_http_unread_bytes gauge\nagentjail_http_unread_bytes {held}\n\
         # HELP agentjail_http_unread_budget_bytes --unread-budget.\n# TYPE agentjail_http_unread_budget_bytes gauge\nagentjail_http_unread_budget_bytes {budget}\n\
         # HELP agentjail_http_unread_dropped_total Connections dropped because the unread total passed --unread-budget.\n# TYPE agentjail_http_unread_dropped_total counter\nagentjail_http_unread_dropped_total {dropped}\n"
    )
}

fn gauges(o: &mut String, stats: &Value, in_flight: usize, connections: usize) {
    let gauge = |o: &mut String, name: &str, help: &str| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge");
    };
    gauge(
        o,
        "agentjail_pool_jails",
        "Warm jails per pool: ready, starting, target.",
    );
    let mut pools: Vec<(String, &Value)> = Vec::new();
    if let Some(m) = stats["pools"].as_object() {
        pools.extend(m.iter().map(|(k, v)| (k.clone(), v)));
    }
    pools.push(("session".into(), &stats["session_pool"]));
    for (pool, p) in &pools {
        for state in ["ready", "starting", "target"] {
            if let Some(n) = p[state].as_u64() {
                let _ = writeln!(
                    o,
                    "agentjail_pool_jails{{pool=\"{pool}\",state=\"{state}\"}} {n}"
                );
            }
        }
    }
    gauge(
        o,
        "agentjail_pool_refill_failures",
        "Warm jails that failed to start, per pool.",
    );
    for (pool, p) in &pools {
        if let Some(n) = p["refill_failures"].as_u64() {
            let _ = writeln!(o, "agentjail_pool_refill_failures{{pool=\"{pool}\"}} {n}");
        }
    }
    gauge(o, "agentjail_sessions_open", "Open sessions.");
    let _ = writeln!(
        o,
        "agentjail_sessions_open {}",
        stats["sessions"].as_u64().unwrap_or(0)
    );
    gauge(
        o,
        "agentjail_http_requests_in_flight",
        "Requests admitted and not yet answered.",
    );
    let _ = writeln!(o, "agentjail_http_requests_in_flight {in_flight}");
    gauge(o, "agentjail_http_connections", "Open HTTP connections.");
    let _ = writeln!(o, "agentjail_http_connections {connections}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_text_counts_jobs_by_prefix_and_sums_the_histogram() {
        let m = Metrics::default();
        m.job("success", Duration::from_millis(3));
        m.job("code_runtime_error:1", Duration::from_millis(30));
        m.job("code_runtime_error:2", Duration::from_secs(1000));
        m.job("sandbox_unavailable:setup", Duration::from_millis(3));
        let stats = json!({"pools": {"python": {"ready": 2, "starting": 0, "target": 2, "refill_failures": 1}},
                           "session_pool": null, "sessions": 3});
        let t = m.render(&stats, 1, 5);
        for line in [
            "agentjail_jobs_total{stop_reason=\"code_runtime_error\"} 2",
            "agentjail_jobs_total{stop_reason=\"success\"} 1",
            "agentjail_job_duration_seconds_bucket{le=\"0.005\"} 2",
            "agentjail_job_duration_seconds_bucket{le=\"0.05\"} 3",
            "agentjail_job_duration_seconds_bucket{le=\"+Inf\"} 4",
            "agentjail_job_duration_seconds_count 4",
            "agentjail_jail_start_failures_total 1",
            "agentjail_pool_jails{pool=\"python\",state=\"ready\"} 2",
            "agentjail_pool_refill_failures{pool=\"python\"} 1",
            "agentjail_sessions_open 3",
            "agentjail_http_connections 5",
        ] {
            assert!(t.lines().any(|l| l == line), "{line} in\n{t}");
        }
    }
}
