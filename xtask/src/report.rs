//! Findings (each fails the run) and notes (printed, never fail).

use std::fmt::Display;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Rule {
    Unreadable,
    JailUpward,
    PolicyJail,
    PlanIo,
    Unsafe,
    ThinMain,
    LongFn,
    CrateDeps,
    LongFile,
    Sys,
    AnyException,
    SilentSkip,
    BareSleep,
    Circle,
    Layer,
    StringError,
    DocPath,
}

impl Rule {
    /// Its number (docs/ARCHITECTURE.md, "The house rules"), its name, and the fix.
    pub fn describe(self) -> (u8, &'static str, &'static str) {
        use Rule::*;
        match self {
            Unreadable => (0, "a file the rules cannot parse", "make it valid Rust"),
            JailUpward => (1, "the jail imports upward", "the jail crate names no other agentjail crate, and its mechanisms neither the supervisor nor launch: pass plain data down instead"),
            PolicyJail => (2, "a policy reaches the jail", "crates/agentjail-engine/src/policy/ names only agentjail_jail::plan::Requirement and agentjail_jail::syscall_groups"),
            PlanIo => (3, "the plan does I/O", "ask the host through plan::Host; crates/agentjail-engine/src/plan/ uses no libc, unsafe, std::fs, std::process, std::net or agentjail_jail::os"),
            Unsafe => (4, "unsafe or a libc call outside the kernel module", "put it in crates/agentjail-jail/src/sys/ behind a safe function (agentjail_jail::os for other crates)"),
            ThinMain => (5, "main.rs reaches past the front ends", "src/main.rs uses clap, std, the agentjail crates and its front-end modules only: move the logic into a front end or the engine crate"),
            LongFn => (6, "long function", "split it, or say why in a comment right above it containing \"long because\""),
            CrateDeps => (7, "crate directions", "keep to the arrows of docs/ARCHITECTURE.md \"The crates\" (xtask/src/data.rs CRATE_DEPS)"),
            LongFile => (8, "file too long", "split it by concern"),
            Sys => (9, "the kernel module outside the jail crate", "use agentjail_jail::os (safe, typed host calls)"),
            AnyException => (10, "a handler counting any exception as refused", "count only the OSError whose errno a control produces"),
            SilentSkip => (11, "a silent return in a test", "skip through require_feature (or a helper on it), print why, or mark a return that is no skip with `// not a skip:`"),
            BareSleep => (12, "a bare sleep in a test", "poll for the condition in a loop, or say in a `// sleep:` comment right above why the sleep cannot decide the outcome"),
            Circle => (13, "a circle between modules", "open it: move what both sides need into a module below them"),
            Layer => (14, "a layer imports upward", "the engine, pipeline, plan and leaves never import a front end or what the front ends share (xtask/src/data.rs LAYERS): move the shared item down"),
            StringError => (15, "Result<_, String> at a crate boundary", "return a typed error (what failed, errno, hint) from a public function"),
            DocPath => (16, "a path named in docs does not exist", "fix the path or the sentence"),
        }
    }
}

#[derive(Default)]
pub struct Report {
    pub findings: Vec<(Rule, String)>,
    pub notes: Vec<String>,
    /// Print the imports inside each circle (`--edges`).
    pub edges: bool,
}

impl Report {
    /// `at` is `file:line` (or a crate, a file); `what` says what is wrong there.
    pub fn find(&mut self, rule: Rule, at: impl Display, what: impl Display) {
        let (n, name, fix) = rule.describe();
        self.findings
            .push((rule, format!("rule {n} ({name}): {at}: {what} — {fix}")));
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }
}
