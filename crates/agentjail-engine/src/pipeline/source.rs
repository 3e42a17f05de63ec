//! Where a job's jail comes from: the [`JailSource`] seam the stages see (`ColdStart` for
//! `run`, the engine for `serve`, `mcp` and http), and the runner jail's plan
//! ([`runner_plan`]) that the engine's pools and the zygote's template start from.

use crate::plan::{JailFile, JailPlan};
use crate::policy::Policy;
use crate::runner::{self, Language};
use agentjail_jail::launch::{StartedJail, Teardown};
use agentjail_jail::supervise::Interrupt;
use agentjail_jail::JailError;
use std::time::Instant;

/// Address space node needs beyond the memory limit when RLIMIT_AS, not a memory cgroup,
/// bounds the jail (with a memory cgroup the rlimit is dropped at launch). V8 reserves its
/// whole code range (512 MiB) and more up front: measured with node 20.20, the runner and
/// the default flags, node aborts at start ("Failed to reserve virtual memory for
/// CodeRange", SIGTRAP) at 704 MiB and starts at 736 MiB; below ~192 MiB it can also hang in
/// start-up. 1 GiB on top of `limits.memory` covers the reservations and the libuv
/// thread pool's stacks; the heap itself is held to `limits.memory` by
/// `--max-old-space-size`.
pub const JS_ADDRESS_SPACE_HEADROOM: u64 = 1024 * 1024 * 1024;

/// The plan of a runner jail for `policy` and `language`: the interpreter runs agentjail's
/// runner for that language, which takes the program from the job pipe. `preload`: the jail
/// starts ahead of its job (Python's warm jails, sessions): import the policy's preload
/// modules and warm the interpreter before the job arrives.
/// JavaScript has only the `run` mode. `job`: the files and host inputs of one job (empty
/// for a pooled jail).
pub fn runner_plan(
    policy: &Policy,
    language: Language,
    mode: runner::Mode,
    preload: bool,
    job: &JobInputs,
) -> Result<JailPlan, PlanError> {
    let (path, source) = language.runner();
    let mut files = vec![JailFile {
        path: path.into(),
        contents: source.into(),
    }];
    files.extend(job.files.iter().map(|f| JailFile {
        path: format!("{}/{}", crate::plan::APP_IN, f.path),
        contents: f.contents.clone(),
    }));
    let a = &policy.artifacts;
    let contents = crate::plan::Contents {
        files: &files,
        inputs: &job.inputs,
        // Room for every artifact plus the directories around them.
        out: Some((
            a.max_total_bytes.0,
            a.max_count.saturating_mul(2).saturating_add(16),
        )),
    };
    let i = &policy.interpreter;
    let argv = match language {
        Language::Python => {
            let modules = if preload {
                policy.preload_modules()
            } else {
                Vec::new()
            };
            runner::argv(&i.python, &i.python_args, mode, preload, &modules)
        }
        Language::JavaScript if mode == runner::Mode::Run => {
            runner::node_argv(&i.node, &i.node_args, policy.limits.memory.0)
        }
        Language::JavaScript => return Err(PlanError::NoSessionMode(language)),
    };
    let mut plan = crate::plan::build(policy, argv, &contents, &agentjail_jail::mount::RealHost)
        .map_err(PlanError::Plan)?;
    plan.runner_fds = true;
    let links = job
        .files
        .iter()
        .filter_map(|f| Some((f.path.as_str(), f.link.as_deref()?)));
    plan.mounts.extend(crate::plan::link_ops(links));
    if language == Language::Python {
        results_plan(&mut plan, &policy.results);
    }
    if language == Language::JavaScript {
        plan.widen_address_space(JS_ADDRESS_SPACE_HEADROOM);
    }
    Ok(plan)
}

/// The variable that tells the Python runner the policy's rich-results bounds
/// (`max_count,max_bytes`; absent when results are off). The runner stays within them; the
/// supervisor applies them whatever it does (crate::pipeline::results).
pub const RESULTS_ENV: &str = "AGENTJAIL_RESULTS";

/// A Python runner's jail: the results' bounds in its environment (after the policy's
/// extras, which cannot set them), and room for the results on its reply pipe.
fn results_plan(plan: &mut JailPlan, r: &crate::policy::ResultsPolicy) {
    plan.env.retain(|(k, _)| k != RESULTS_ENV);
    if r.max_count > 0 && r.max_bytes.0 > 0 {
        let bounds = format!("{},{}", r.max_count, r.max_bytes.0);
        plan.env.push((RESULTS_ENV.to_string(), bounds));
    }
    plan.limits.reply_bytes = agentjail_jail::supervise::REPLY_CAP + r.max_bytes.0;
}

/// Why a runner jail has no plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The language runs once per jail (JavaScript): there is no session runner for it.
    NoSessionMode(Language),
    /// The policy's plan was refused (crate::plan::build says why).
    Plan(crate::plan::BuildError),
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::NoSessionMode(l) => write!(f, "{} has no session mode", l.name()),
            PlanError::Plan(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PlanError {}

/// A job whose jail cannot be planned fails as the jail crate's `JailError::plan`, which
/// holds the reason as text (the jail crate does not know this crate's types).
impl From<PlanError> for String {
    fn from(e: PlanError) -> String {
        e.to_string()
    }
}

/// What a job brings into its jail besides its code: the action's `files` and the host
/// inputs (`run --input`). A jail with inputs is built for its job (never a warm one).
#[derive(Debug, Clone, Default)]
pub struct JobInputs {
    pub files: Vec<crate::contract::InputFile>,
    pub inputs: Vec<crate::plan::HostInput>,
}

impl JobInputs {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.inputs.is_empty()
    }
}

/// How a job's jail was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// Started before the job existed, its interpreter warm (a pool's).
    Warm,
    /// Started for this job.
    Cold,
}

/// A jail handed to one job.
pub struct Acquired {
    pub jail: StartedJail,
    pub start: Start,
    /// The runner already reported ready: its start-up and preloads are not the job's (the
    /// limits count from delivery and its CPU time so far is subtracted).
    pub ready: bool,
    /// How long the job waited for it, µs.
    pub wait_us: u64,
}

/// Where the jobs of a front end get their jails, and what may interrupt them.
pub trait JailSource {
    /// A started runner jail (mode `run`) for `policy` and `language`, holding `job`'s files
    /// and host inputs. `policy` is the job's effective policy; a pool may hand out a jail
    /// built for the policy it tightens (the job's tighter limits are applied at delivery).
    fn acquire(
        &self,
        policy: &Policy,
        language: Language,
        job: &JobInputs,
    ) -> Result<Acquired, JailError>;
    /// What stops a running job from agentjail's side.
    fn interrupt(&self) -> Option<Interrupt<'_>>;
    /// Host inputs every job of this source gets (`run --input`).
    fn inputs(&self) -> &[crate::plan::HostInput] {
        &[]
    }
    /// Where artifacts are written on the host (`run --artifacts-dir`); None: inline.
    fn artifacts_dir(&self) -> Option<&crate::artifacts::ArtifactsDir> {
        None
    }
    /// Where the job's output goes as it is read, when its request streams (crate::pipeline::stream).
    fn output(&self) -> Option<&dyn crate::pipeline::stream::OutputSink> {
        None
    }
    /// Where a finished jail's cgroup goes to be removed (dropped here by default).
    fn teardown(&self, t: Teardown) {
        drop(t);
    }
    /// Where compile outcomes are kept (crate::pipeline::compile_cache); None: nowhere.
    fn compile_store(&self) -> Option<&dyn crate::pipeline::compile_cache::CompileStore> {
        None
    }
    /// A jail started before this job for exactly `plan` (a compiled language's step,
    /// crate::pipeline::compile: a plan with `late_files`, waiting for them), never used by
    /// another job; None: the caller starts one. `plan` is the job's; a jail started for a
    /// plan that differs in anything but the wall limit (applied at delivery) is never
    /// handed out.
    fn warm(&self, plan: &JailPlan) -> Option<StartedJail> {
        let _ = plan;
        None
    }
}

/// `agentjail run`'s source: one jail started on this thread, for this job.
pub struct ColdStart {
    sigfd: Option<std::os::fd::OwnedFd>,
    /// Host inputs from the command line (`--input`).
    pub inputs: Vec<crate::plan::HostInput>,
    /// `--artifacts-dir`.
    pub artifacts_dir: Option<crate::artifacts::ArtifactsDir>,
    /// `--cache`'s directory, for compile outcomes (crate::pipeline::compile_cache).
    pub compile_cache: Option<crate::cache::Cache>,
}

impl ColdStart {
    /// Blocks SIGTERM, SIGINT and SIGHUP into a signalfd: they stop the job with a record.
    pub fn new() -> ColdStart {
        ColdStart {
            sigfd: agentjail_jail::supervise::block_termination_signals(),
            inputs: Vec::new(),
            artifacts_dir: None,
            compile_cache: None,
        }
    }
}

/// A jail planned for this job and started on the calling thread, as `agentjail run` starts
/// one (no preloads; the runner's ready report is read by the run itself).
pub fn start_cold(
    policy: &Policy,
    language: Language,
    job: &JobInputs,
) -> Result<Acquired, JailError> {
    let t = Instant::now();
    let plan =
        runner_plan(policy, language, runner::Mode::Run, false, job).map_err(JailError::plan)?;
    let jail = agentjail_jail::launch::prepare(&plan)?.start()?;
    Ok(Acquired {
        jail,
        start: Start::Cold,
        ready: false,
        wait_us: t.elapsed().as_micros() as u64,
    })
}

impl Default for ColdStart {
    fn default() -> Self {
        ColdStart::new()
    }
}

impl JailSource for ColdStart {
    fn acquire(
        &self,
        policy: &Policy,
        language: Language,
        job: &JobInputs,
    ) -> Result<Acquired, JailError> {
        start_cold(policy, language, job)
    }

    fn interrupt(&self) -> Option<Interrupt<'_>> {
        self.sigfd.as_ref().map(Interrupt::Signals)
    }

    fn inputs(&self) -> &[crate::plan::HostInput] {
        &self.inputs
    }

    fn artifacts_dir(&self) -> Option<&crate::artifacts::ArtifactsDir> {
        self.artifacts_dir.as_ref()
    }

    fn compile_store(&self) -> Option<&dyn crate::pipeline::compile_cache::CompileStore> {
        self.compile_cache
            .as_ref()
            .map(|c| c as &dyn crate::pipeline::compile_cache::CompileStore)
    }
}
