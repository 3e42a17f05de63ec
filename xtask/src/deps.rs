//! Rule 7: crate directions, from `cargo metadata` (every dependency kind).

use crate::data;
use crate::metadata::Package;
use crate::report::{Report, Rule};

pub fn check(packages: &[Package], r: &mut Report) {
    let ours: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    for p in packages {
        let Some((_, allowed)) = data::CRATE_DEPS.iter().find(|(n, _)| *n == p.name) else {
            let what = "a workspace crate with no directions: add it to xtask/src/data.rs CRATE_DEPS and docs/ARCHITECTURE.md \"The crates\"";
            r.find(Rule::CrateDeps, &p.name, what);
            continue;
        };
        for d in &p.deps {
            let dep = d.name.as_str();
            let at = format!("{} -> {dep} ({})", p.name, d.kind);
            if data::ASYNC_DEPS.contains(&dep) && !data::ASYNC_CRATES.contains(&p.name.as_str()) {
                r.find(
                    Rule::CrateDeps,
                    &at,
                    format!(
                        "the async stack is {}'s only",
                        data::ASYNC_CRATES.join(", ")
                    ),
                );
            }
            let tls_ok =
                p.name == data::TLS_CRATE || (p.name == data::TLS_DEV_CRATE && d.kind == "dev");
            if data::TLS_DEPS.contains(&dep) && !tls_ok {
                let what = format!(
                    "the TLS stack is {}'s (and {}'s tests')",
                    data::TLS_CRATE,
                    data::TLS_DEV_CRATE
                );
                r.find(Rule::CrateDeps, &at, what);
            }
            if (ours.contains(&dep) || dep.starts_with("agentjail")) && !allowed.contains(&dep) {
                let what = match dep == data::BINARY_CRATE {
                    true => "an arrow the architecture does not draw: agentjail is the binary, whose front ends nothing imports; depend on agentjail-engine, which holds what they share",
                    false => "an arrow the architecture does not draw",
                };
                r.find(Rule::CrateDeps, &at, what);
            }
        }
    }
}
