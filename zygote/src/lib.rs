//! agentjail-zygote: the template process of agentjail's zygote (the reasoning, the
//! protocol and the jail side are in the engine crate's src/zygote/). This crate is only the part
//! agentjail cannot hold: libpython, embedded through its C API.
//!
//! The interpreter is initialised as `PYTHON -I -S -B -X utf8` would be
//! (`agentjail_engine::zygote::PYTHON_ARGS`): isolated (no environment, no user site, no script
//! directory on sys.path), no `site`, no bytecode writes, UTF-8 mode. Then
//! `agentjail_engine::zygote::template_main` takes over; each jail's program calls [`entry`].
//!
//! Which Python is fixed at build time by scripts/build-zygote.sh (`--python PATH`, the
//! host's /usr/bin/python3 by default), through the environment this crate is compiled in:
//! `AGENTJAIL_ZYGOTE_PYTHON` (the path as a policy names it: sys.executable),
//! `AGENTJAIL_ZYGOTE_PYTHON_BINARY` (the file it resolves to), `AGENTJAIL_ZYGOTE_PYTHON_HOME`
//! (its prefix) and `AGENTJAIL_ZYGOTE_PYTHON_VERSION`; the script links the matching
//! libpython. Without them (a plain `cargo build` of the workspace) Debian's 3.11.

use agentjail_engine::zygote::EmbeddedPython;
use std::ffi::{c_char, c_int, CString};

/// `option_env!(name)`, or `default` when the build did not set it.
macro_rules! build_env {
    ($name:literal, $default:literal) => {
        match option_env!($name) {
            Some(v) => v,
            None => $default,
        }
    };
}

/// The interpreter path the template presents as sys.executable (a policy's `python`).
const PROGRAM: &str = build_env!("AGENTJAIL_ZYGOTE_PYTHON", "/usr/bin/python3");

/// The Python this binary embeds (see the crate documentation).
const PYTHON: EmbeddedPython = EmbeddedPython {
    version: build_env!("AGENTJAIL_ZYGOTE_PYTHON_VERSION", "3.11"),
    binary: build_env!("AGENTJAIL_ZYGOTE_PYTHON_BINARY", "/usr/bin/python3.11"),
    home: build_env!("AGENTJAIL_ZYGOTE_PYTHON_HOME", "/usr"),
};

/// Py_file_input (Include/compile.h): compile a module.
const PY_FILE_INPUT: c_int = 257;

#[allow(non_upper_case_globals)]
extern "C" {
    static mut Py_IsolatedFlag: c_int;
    static mut Py_NoSiteFlag: c_int;
    static mut Py_DontWriteBytecodeFlag: c_int;
    static mut Py_UTF8Mode: c_int;
    fn Py_SetProgramName(name: *const libc::wchar_t);
    fn Py_SetPythonHome(home: *const libc::wchar_t);
    fn Py_InitializeEx(initsigs: c_int);
    fn Py_CompileString(
        source: *const c_char,
        filename: *const c_char,
        start: c_int,
    ) -> *mut libc::c_void;
    fn PyImport_ExecCodeModuleEx(
        name: *const c_char,
        code: *mut libc::c_void,
        pathname: *const c_char,
    ) -> *mut libc::c_void;
    fn PyErr_Print();
    fn PyRun_SimpleString(command: *const c_char) -> c_int;
    fn PyOS_BeforeFork();
    fn PyOS_AfterFork_Parent();
    fn PyOS_AfterFork_Child();
}

/// A NUL-terminated wide string for the legacy configuration calls, which keep the pointer:
/// leaked on purpose (once per process).
fn wide(s: &str) -> *const libc::wchar_t {
    let v: Vec<libc::wchar_t> = s.chars().map(|c| c as libc::wchar_t).chain([0]).collect();
    v.leak().as_ptr()
}

fn init_python() {
    // SAFETY: before Py_InitializeEx nothing else touches these globals (this process is
    // single-threaded); the wide strings are leaked, so they outlive the interpreter.
    unsafe {
        Py_IsolatedFlag = 1;
        Py_NoSiteFlag = 1;
        Py_DontWriteBytecodeFlag = 1;
        Py_UTF8Mode = 1;
        // sys.executable and sys.prefix as the embedded interpreter's: this binary's own
        // path would be the interpreter's name in every jail and would not find the stdlib.
        Py_SetProgramName(wide(PROGRAM));
        Py_SetPythonHome(wide(PYTHON.home));
        // 1: the signal set-up a python3 process gets (SIGPIPE and SIGXFSZ ignored, SIGINT
        // raising KeyboardInterrupt); the jail's child resets the dispositions and the
        // runner's zygote_job sets them again.
        Py_InitializeEx(1);
    }
}

struct Embedded;

impl agentjail_engine::zygote::Interpreter for Embedded {
    fn load_runner(
        &mut self,
        source: &str,
        filename: &str,
        preloads: &[String],
    ) -> Result<(), String> {
        let c = |s: &str| CString::new(s).map_err(|_| format!("NUL byte in {s:?}"));
        let (source, filename) = (c(source)?, c(filename)?);
        let name = c("agentjail_runner")?;
        // SAFETY: the interpreter is initialised and this thread holds the GIL (the main
        // thread after Py_InitializeEx); the strings are NUL-terminated and outlive the calls.
        let module = unsafe {
            let code = Py_CompileString(source.as_ptr(), filename.as_ptr(), PY_FILE_INPUT);
            if code.is_null() {
                std::ptr::null_mut()
            } else {
                PyImport_ExecCodeModuleEx(name.as_ptr(), code, filename.as_ptr())
            }
        };
        if module.is_null() {
            // SAFETY: an exception is set (the compile or the module's code raised).
            unsafe { PyErr_Print() };
            return Err("the runner did not load (the traceback is above)".into());
        }
        // JSON strings are Python string literals: the names reach Python as data.
        let list = serde_json::to_string(preloads).map_err(|e| e.to_string())?;
        let call = c(&format!(
            "import agentjail_runner\nagentjail_runner.template({list})"
        ))?;
        // SAFETY: as above; PyRun_SimpleString prints and clears any exception itself.
        if unsafe { PyRun_SimpleString(call.as_ptr()) } != 0 {
            return Err("the runner's template step failed (the traceback is above)".into());
        }
        Ok(())
    }

    fn python(&self) -> EmbeddedPython {
        PYTHON
    }

    fn before_fork(&mut self) {
        // SAFETY: called by the thread holding the GIL, paired with after_fork_parent.
        unsafe { PyOS_BeforeFork() }
    }

    fn after_fork_parent(&mut self) {
        // SAFETY: paired with the before_fork just made, on the same thread.
        unsafe { PyOS_AfterFork_Parent() }
    }
}

/// Each jail's program, after its jail is complete (seccomp installed): the interpreter's
/// own after-fork work (thread state, locks, the `os.register_at_fork` hooks that reseed
/// `random`), then the runner takes its one job. The runner ends the process itself.
fn entry() -> ! {
    let job = c"import agentjail_runner\nagentjail_runner.zygote_job()";
    // SAFETY: this process is a fork of the template's single thread, which held the GIL
    // when it cloned; PyOS_AfterFork_Child is the documented first call in such a child.
    unsafe {
        PyOS_AfterFork_Child();
        PyRun_SimpleString(job.as_ptr());
    }
    // Reached only if the runner returned, which it never does on purpose.
    // SAFETY: _exit ends the process without running anything else.
    unsafe { libc::_exit(2) }
}

/// The process's entry point (this library is linked into an executable by
/// scripts/build-zygote.sh).
#[no_mangle]
pub extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    init_python();
    agentjail_engine::zygote::template_main(&mut Embedded, entry)
}
