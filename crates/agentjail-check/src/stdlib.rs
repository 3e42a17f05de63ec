//! What the modules a policy may allow hand a program, and the lists the checker and
//! `policy lint` share. Every fact about a module lives here, next to the reason for it.
//!
//! The checker judges attribute access by name, so what matters about a module is which
//! names on it (or on the objects it returns) reach something the program must not have:
//! a dangerous module, a string evaluated as code, native memory or a pickle. Three kinds
//! of fact close those:
//!
//! * module chains: [`STDLIB_TABLES`] says which attributes of an allowed module
//!   are modules; a module reached through an attribute must be an allowed import itself,
//!   exactly like `import a.b`, so `np.lib`, `pd.io`, `plt.sys` are denied without
//!   enumerating what lies behind them;
//! * per-module safe lists ([`MODULE_SAFE_ATTRS`], the whole allowed API) for small modules
//!   that re-export dangerous things, and per-module denials ([`MODULE_DENIED_ATTRS`]) for
//!   large ones, each with its reason;
//! * attribute names denied on every object ([`FRAME_ATTRIBUTES`], [`INTERNAL_ATTRIBUTES`],
//!   [`STRING_EVALUATING_ATTRIBUTES`]) and, for third-party packages, on every object once
//!   the package is allowed ([`PackageTable::reach`], [`PACKAGE_DENIED_ATTRIBUTES`]).
//!
//! What no name check can close is listed in the report of the change that allowed the
//! module (and in docs/SECURITY.md, "The static check"): the jail contains it.

/// Modules that hand the program the host or the interpreter: processes, files, the import
/// system, raw memory (`os`, `sys`, `builtins`, `subprocess`, `importlib`, `ctypes`, `io`,
/// `pathlib`, `shutil`, `socket`), and modules that run or reach arbitrary code: `pickle`
/// and `_pickle` (loads calls any callable), `marshal` (loads code objects), `types`
/// (builds functions from code objects), `gc` (get_objects/get_referrers reach every object,
/// frames included), `inspect` (frames, getattr_static), `runpy`, `code` (compile and run),
/// `pydoc` (`locate` resolves a dotted string to any object), `pkgutil` (`resolve_name`),
/// `multiprocessing` (pickles between processes) and `jinja2` (its templates are code).
/// No policy may allow one (`policy lint` warns), and no attribute chain may reach one.
pub const DANGEROUS_MODULES: &[&str] = &[
    "os",
    "sys",
    "builtins",
    "subprocess",
    "importlib",
    "ctypes",
    "io",
    "pathlib",
    "shutil",
    "socket",
    "pickle",
    "marshal",
    "types",
    "gc",
    "inspect",
    "runpy",
    "pydoc",
    "pkgutil",
    "code",
    "multiprocessing",
    "_pickle",
    "jinja2",
];

/// Whether `module` (dotted) is, or is inside, a [`DANGEROUS_MODULES`] entry.
pub fn is_dangerous_module(module: &str) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    DANGEROUS_MODULES.contains(&module) || DANGEROUS_MODULES.contains(&top)
}

pub use super::table_types::{Graph, PackageTable, StdlibTable};
pub use super::tables::{PACKAGE_TABLE, STDLIB_TABLES};

/// The Python versions the checker has a standard-library table for (`3.10` to `3.13`).
pub fn supported_versions() -> Vec<&'static str> {
    STDLIB_TABLES.iter().map(|t| t.python).collect()
}

/// The standard-library table of `version` (`3.N`), if there is one.
pub fn stdlib_table(version: &str) -> Option<&'static StdlibTable> {
    STDLIB_TABLES.iter().find(|t| t.python == version)
}

/// The module tables of one Python version: its standard library's graph, then the packages'.
#[derive(Debug, Clone, Copy)]
pub struct Modules {
    stdlib: &'static StdlibTable,
}

impl Modules {
    /// The tables of `version` (`3.N`); `None` when there is no table for it.
    pub fn for_version(version: &str) -> Option<Modules> {
        stdlib_table(version).map(|stdlib| Modules { stdlib })
    }

    /// The version these tables are for.
    pub fn python(&self) -> &'static str {
        self.stdlib.python
    }

    fn edges(&self, module: &str) -> Option<&'static [(&'static str, &'static str)]> {
        let find = |g: Graph| g.iter().find(|(name, _)| *name == module).map(|(_, e)| *e);
        find(self.stdlib.graph).or_else(|| find(PACKAGE_TABLE.graph))
    }

    /// The module (dotted) that attribute `attr` of `module` is. `None` when the attribute
    /// is not a module or the module is not in the tables.
    pub fn module_edge(&self, module: &str, attr: &str) -> Option<&'static str> {
        self.edges(module)
            .and_then(|edges| edges.iter().find(|(a, _)| *a == attr))
            .map(|(_, target)| *target)
    }

    /// The names `from module import *` binds in this version; `None` when the tables do
    /// not list them (a star import of it is then refused).
    pub fn star_exports(&self, module: &str) -> Option<&'static [&'static str]> {
        self.stdlib
            .exports
            .iter()
            .find(|(name, _)| *name == module)
            .map(|(_, names)| *names)
    }

    /// Whether the tables know `module` (so a missing edge means "not a module").
    pub fn module_known(&self, module: &str) -> bool {
        self.edges(module).is_some()
    }

    /// Dangerous modules `module` reaches through plain attribute chains, with the chain,
    /// when no attribute on the way is denied. `None` when the module is not in the tables.
    /// Inside a third-party package (a module the tables do not expand) the chain ends in
    /// the package's reach names, written `numpy…ctypes`.
    pub fn reachable_dangerous_modules(
        &self,
        module: &str,
        denied_attributes: &[String],
        deny_dunder: bool,
    ) -> Option<Vec<(String, String)>> {
        self.edges(module)?;
        let root_top = module.split('.').next().unwrap_or(module);
        let blocked = |attr: &str| {
            denied_attributes.iter().any(|d| d == attr) || (deny_dunder && attr.starts_with("__"))
        };
        let mut found: Vec<(String, String)> = Vec::new();
        let mut seen: Vec<String> = vec![module.to_string()];
        let mut queue: std::collections::VecDeque<(String, String)> =
            std::collections::VecDeque::from([(module.to_string(), module.to_string())]);
        while let Some((m, path)) = queue.pop_front() {
            let Some(edges) = self.edges(&m) else {
                // Outside the tables: a module of a package's closure (its own submodules
                // or what they import), summarised by the package's reach names.
                let top = if package_reach(root_top).is_some() {
                    root_top
                } else {
                    m.split('.').next().unwrap_or(&m)
                };
                for name in package_reach(top).unwrap_or(&[]) {
                    if !blocked(name) {
                        found.push(((*name).to_string(), format!("{top}\u{2026}{name}")));
                    }
                }
                continue;
            };
            for (attr, target) in edges {
                if blocked(attr) || seen.iter().any(|s| s == target) {
                    continue;
                }
                seen.push((*target).to_string());
                let chain = format!("{path}.{attr}");
                if is_dangerous_module(target) {
                    found.push(((*target).to_string(), chain));
                } else {
                    queue.push_back(((*target).to_string(), chain));
                }
            }
        }
        found.sort();
        found.dedup();
        Some(found)
    }
}

/// Attributes that walk from any generator, coroutine, traceback or frame to a frame's
/// globals and builtins without a dunder name; access to any of them lets code reach
/// `__import__` through a dict subscript with a string key. The checker denies them under
/// every policy; the default policies also list them in `denied_attributes` so a reviewer
/// reads them there, and `policy lint` warns when a policy leaves one out.
pub const FRAME_ATTRIBUTES: &[&str] = &[
    "gi_frame",
    "gi_code",
    "gi_yieldfrom",
    "cr_frame",
    "cr_code",
    "cr_await",
    "cr_origin",
    "ag_frame",
    "ag_code",
    "ag_await",
    "f_globals",
    "f_locals",
    "f_builtins",
    "f_back",
    "f_code",
    "f_trace",
    "tb_frame",
    "tb_next",
];

/// Other attributes denied under every policy: code-object and function internals, the class
/// graph (`mro`), the formatting machinery that walks attributes by name (`format_map`,
/// `vformat`, `get_field`), and the import system (`modules`, `load_module`, `exec_module`).
pub const INTERNAL_ATTRIBUTES: &[&str] = &[
    "co_code",
    "co_consts",
    "co_names",
    "func_globals",
    "func_code",
    "mro",
    "format_map",
    "vformat",
    "get_field",
    "modules",
    "load_module",
    "exec_module",
];

/// Attributes that evaluate a string as code or resolve a string to an attribute, denied on
/// every object under every policy: each one turns a run-time string (which no static check
/// can read) into what the checker denies in source.
///
/// * `eval`, `exec`: pandas' `pd.eval`, `DataFrame.eval` and `DataFrame.query` evaluate
///   expressions with attribute access and calls (`query` is denied for the same reason);
/// * `get_type_hints`, `get_annotations`, `_evaluate`, `_eval_type`: typing's evaluators of
///   string annotations and `ForwardRef`s, which `eval` with the builtins in scope
///   (`typing.get_args(List['...'])[0]._evaluate(None, None, frozenset())` runs the string);
/// * `attrgetter`, `methodcaller`: `operator`'s getattr by string (`attrgetter('__class__')`);
/// * `resolve_name`, `locate`, `import_module`: pkgutil, pydoc and importlib resolve dotted
///   strings to any object in the interpreter;
/// * `from_string`, `from_custom_template`: jinja2 (pandas' `DataFrame.style` renders with
///   it) compiles template text, and templates call functions and walk dunders;
/// * `_create_`, `_missing_`: enum's functional API and lookup hook under their sunder names
///   (the public spellings are field-name factories, see [`FIELD_NAME_FACTORIES`]).
pub const STRING_EVALUATING_ATTRIBUTES: &[&str] = &[
    "eval",
    "exec",
    "query",
    "get_type_hints",
    "get_annotations",
    "_evaluate",
    "_eval_type",
    "attrgetter",
    "methodcaller",
    "resolve_name",
    "locate",
    "import_module",
    "from_string",
    "from_custom_template",
    "_create_",
    "_missing_",
];

/// Attribute names denied only to keep a program off the network: `urlopen`
/// (`urllib.request`), `request` (`http.client.HTTPConnection.request`, `requests.request`,
/// `urllib3`'s pools) and `connect` (`socket.connect`, `HTTPConnection.connect`). The
/// policy loader settles them by the policy's `[network]` (agentjail-engine's
/// `Policy::settle_network_attributes`): under a policy without network they are in
/// `check.denied_attributes` whether or not the file lists them; under one with network
/// (an allowlist, or the host's network) they are taken out of it, since the jail's
/// network namespace and the proxy, not the check, decide what a connection reaches.
pub const NETWORK_ATTRIBUTES: &[&str] = &["connect", "request", "urlopen"];

/// Whether the checker denies attribute `attr` whatever the policy says.
pub fn always_denied_attribute(attr: &str) -> bool {
    FRAME_ATTRIBUTES.contains(&attr)
        || INTERNAL_ATTRIBUTES.contains(&attr)
        || STRING_EVALUATING_ATTRIBUTES.contains(&attr)
}

/// Callables that turn strings into attribute names of a new class: field names of
/// `namedtuple` (also re-exported as `functools.namedtuple`), `typing.NamedTuple` and
/// `dataclasses.make_dataclass` (and its `namespace=` keys), and member names of enum's
/// functional API (`Enum('E', 'a b')`, also on any enum class without members). Those names
/// are attributes the program never spells with a dot: `make_dataclass('D',
/// ['__array_interface__'])` makes numpy read a pointer from a dict (arbitrary memory), and
/// a field named `gi_frame` lands in `__match_args__`, which `case D(x)` reads with getattr.
/// So the checker requires the names to be literals and checks each like an attribute; it
/// recognises the call by the callable's own name, however the module was imported.
/// The second element is the index of the positional argument holding the names.
pub const FIELD_NAME_FACTORIES: &[(&str, usize)] = &[
    ("namedtuple", 1),
    ("NamedTuple", 1),
    ("make_dataclass", 1),
    ("Enum", 1),
    ("IntEnum", 1),
    ("StrEnum", 1),
    ("Flag", 1),
    ("IntFlag", 1),
    ("ReprEnum", 1),
];

/// Enum classes whose subclasses without members are field-name factories themselves.
pub const ENUM_BASES: &[&str] = &["Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum"];

/// The reach names ([`PackageTable::reach`]) of third-party package `top`, if it is one we
/// know.
pub fn package_reach(top: &str) -> Option<&'static [&'static str]> {
    PACKAGE_TABLE
        .reach
        .iter()
        .find(|(p, _)| *p == top)
        .map(|(_, names)| *names)
}

/// Attributes denied on every object once a policy allows the package, besides its
/// [`PackageTable::reach`] names: what its objects hand out that no module rule sees.
/// * numpy: `ctypes` (`a.ctypes._ctypes` is the ctypes module; `a.ctypes.data` a raw
///   pointer) and `as_strided` (views of arbitrary memory around an array);
/// * pandas: `style` (`DataFrame.style` is a Styler rendering jinja2 templates, whose
///   `env`/`template_*` attributes compile template text), `to_pickle` (writes a pickle the
///   denied `read_pickle` would run; no job needs it).
///
/// `plt.style` and `matplotlib.style` are modules, judged by the module rules instead.
pub const PACKAGE_DENIED_ATTRIBUTES: &[(&str, &[&str])] = &[
    ("numpy", &["ctypes", "_ctypes", "as_strided"]),
    ("pandas", &["style", "to_pickle"]),
    ("matplotlib", &[]),
];

/// Attributes denied on any object when `package` (top-level) is allowed: its
/// [`PackageTable::reach`] and [`PACKAGE_DENIED_ATTRIBUTES`] names.
pub fn package_denied_attribute(package: &str, attr: &str) -> bool {
    package_reach(package).is_some_and(|names| names.contains(&attr))
        || PACKAGE_DENIED_ATTRIBUTES
            .iter()
            .any(|(p, names)| *p == package && names.contains(&attr))
}

/// Safe lists: the whole API a program may use, for small modules whose namespace
/// re-exports dangerous things. Only the documented API (`__all__`) is listed, as of 3.11;
/// the lists allow names, so a name a version lacks is an AttributeError and a name a later
/// version adds (3.13's `statistics.kde`) is denied until listed. Whether an allowed name
/// is a module is asked of the version's own graph ([`Modules`]).
/// * `json` re-exports `codecs`, `decoder`, `encoder`, `scanner`;
/// * `statistics` re-exports `sys`, `random`, `math`, `numbers`, `Fraction`, `Decimal`, ...;
/// * `copy` exposes `dispatch_table` (copyreg's global reduce table, which pickle shares:
///   writing it changes what every later copy and pickle calls);
/// * `operator` minus `attrgetter` and `methodcaller` (getattr and method calls by string;
///   `itemgetter` does only `[]` lookups and stays);
/// * `random` hides `_os` (the os module) behind its `__all__`.
/// * `requests` (third party, not in the tables; importable where the host installed it and
///   the interpreter runs `site`, as policies/net.toml's does): its top-level API, which
///   re-exports `utils`, `compat`, `packages` (urllib3, with `os`, `sys`, `socket` behind).
pub const MODULE_SAFE_ATTRS: &[(&str, &[&str])] = &[
    (
        "requests",
        &[
            "get",
            "post",
            "put",
            "patch",
            "delete",
            "head",
            "options",
            "request",
            "Session",
            "session",
            "Request",
            "Response",
            "PreparedRequest",
            "RequestException",
            "HTTPError",
            "ConnectionError",
            "Timeout",
            "ConnectTimeout",
            "ReadTimeout",
            "TooManyRedirects",
            "JSONDecodeError",
            "codes",
        ],
    ),
    (
        "json",
        &[
            "dump",
            "dumps",
            "load",
            "loads",
            "JSONDecoder",
            "JSONDecodeError",
            "JSONEncoder",
        ],
    ),
    (
        "statistics",
        &[
            "NormalDist",
            "StatisticsError",
            "correlation",
            "covariance",
            "fmean",
            "geometric_mean",
            "harmonic_mean",
            "linear_regression",
            "mean",
            "median",
            "median_grouped",
            "median_high",
            "median_low",
            "mode",
            "multimode",
            "pstdev",
            "pvariance",
            "quantiles",
            "stdev",
            "variance",
        ],
    ),
    ("copy", &["copy", "deepcopy", "Error", "error"]),
    (
        "operator",
        &[
            "abs",
            "add",
            "and_",
            "call",
            "concat",
            "contains",
            "countOf",
            "delitem",
            "eq",
            "floordiv",
            "ge",
            "getitem",
            "gt",
            "iadd",
            "iand",
            "iconcat",
            "ifloordiv",
            "ilshift",
            "imatmul",
            "imod",
            "imul",
            "index",
            "indexOf",
            "inv",
            "invert",
            "ior",
            "ipow",
            "irshift",
            "is_",
            "is_not",
            "isub",
            "itemgetter",
            "itruediv",
            "ixor",
            "le",
            "length_hint",
            "lshift",
            "lt",
            "matmul",
            "mod",
            "mul",
            "ne",
            "neg",
            "not_",
            "or_",
            "pos",
            "pow",
            "rshift",
            "setitem",
            "sub",
            "truediv",
            "truth",
            "xor",
        ],
    ),
    (
        "random",
        &[
            "Random",
            "SystemRandom",
            "betavariate",
            "choice",
            "choices",
            "expovariate",
            "gammavariate",
            "gauss",
            "getrandbits",
            "getstate",
            "lognormvariate",
            "normalvariate",
            "paretovariate",
            "randbytes",
            "randint",
            "random",
            "randrange",
            "sample",
            "seed",
            "setstate",
            "shuffle",
            "triangular",
            "uniform",
            "vonmisesvariate",
            "weibullvariate",
        ],
    ),
];

/// Per-module denials for allowed modules too large for a safe list, with the reason and
/// what to use instead (the checker prints it). Module-valued attributes need no entry: the
/// module rule already requires them to be allowed imports.
///
/// The third-party decisions, beyond these names (data.toml allows the packages):
/// * numpy: `lib`, `ctypeslib`, `testing`, `f2py`, `distutils`, `core`, `ma`, `rec` are
///   modules that are not allowed imports, so the module rule denies them; `load` and
///   `lookfor` are denied here; `a.ctypes` and `as_strided` on every object
///   ([`PACKAGE_DENIED_ATTRIBUTES`]).
/// * pandas: `io`, `api`, `core`, `plotting`, `testing`, `util` are denied by the module
///   rule; `eval`/`query` everywhere ([`STRING_EVALUATING_ATTRIBUTES`]); the unpickling
///   and subprocess readers here; `read_csv`, `read_json`, `read_excel`, `read_html` stay
///   (they read what the jail lets `open` read, and there is no network); a string passed
///   to `apply`/`agg`/`transform`/`aggfunc` is a method name and checked as one.
/// * matplotlib: `matplotlib.use`, `plt.switch_backend` and pandas' `plotting.backend`
///   import a module named by a string (`module://x`) without handing it to the program:
///   accepted, the jail contains import side effects. `rcParams`/`plt.rc`/`rc_context`
///   stay although matplotlib evaluates `axes.prop_cycle` strings with `eval` (no
///   builtins, dunders refused, generator frames still walk out): the same string is read
///   from a `matplotlibrc` in the working directory at import, so denying the setters
///   would not close it; the jail contains it. `StrMethodFormatter` and
///   `set_major_formatter(str)` run `str.format` on a run-time string: read-only walks
///   from a float, accepted.
pub const MODULE_DENIED_ATTRS: &[(&str, &[(&str, &str)])] = &[
    (
        "typing",
        &[
            ("get_type_hints", "it evaluates string annotations with eval; read __annotations__-free: use dataclasses.fields()"),
            ("ForwardRef", "a ForwardRef's _evaluate runs its string with eval"),
        ],
    ),
    (
        "functools",
        &[
            ("singledispatch", "register() evaluates string annotations (typing.get_type_hints); dispatch with isinstance or a dict of types"),
            ("singledispatchmethod", "register() evaluates string annotations; dispatch with isinstance"),
        ],
    ),
    (
        "dataclasses",
        &[("FunctionType", "it is types.FunctionType, which builds functions from code objects")],
    ),
    (
        "enum",
        &[
            ("EnumType", "the metaclass builds classes from an arbitrary namespace dict; subclass Enum"),
            ("EnumMeta", "the metaclass builds classes from an arbitrary namespace dict; subclass Enum"),
        ],
    ),
    (
        "abc",
        &[("ABCMeta", "calling the metaclass builds a class from an arbitrary namespace dict (like type()); subclass abc.ABC")],
    ),
    (
        "numpy",
        &[
            ("load", "np.load(allow_pickle=True) unpickles, which calls any callable; use np.loadtxt, np.genfromtxt or np.fromfile"),
            ("lookfor", "it imports modules named by a string"),
            ("test", "it runs pytest, which loads plugins named by strings"),
        ],
    ),
    (
        "pandas",
        &[
            ("read_pickle", "unpickling calls any callable; use pd.read_csv or pd.read_json"),
            ("read_hdf", "PyTables unpickles object columns; use pd.read_csv or pd.read_json"),
            ("HDFStore", "PyTables unpickles object columns; use pd.read_csv or pd.read_json"),
            ("read_clipboard", "it runs xclip/xsel as subprocesses"),
            ("read_sql", "there is no database in the jail; use pd.read_csv"),
            ("read_sql_query", "there is no database in the jail; use pd.read_csv"),
            ("read_sql_table", "there is no database in the jail; use pd.read_csv"),
            ("read_gbq", "there is no network in the jail"),
            ("test", "it runs pytest, which loads plugins named by strings"),
        ],
    ),
    (
        "matplotlib",
        &[("test", "it runs pytest, which loads plugins named by strings")],
    ),
];

/// For allowed modules without a safe list: attributes that are known side doors, besides
/// the [`DANGEROUS_MODULES`] themselves (used when the module is not in the graph, so the
/// module rule cannot tell which attributes are modules).
const MODULE_SIDE_DOORS: [&str; 11] = [
    "codecs",
    "posix",
    "signal",
    "pty",
    "tempfile",
    "mmap",
    "decoder",
    "encoder",
    "scanner",
    "Formatter",
    "copyreg",
];

/// The safe list of `module`, if it has one.
pub fn safe_attrs(module: &str) -> Option<&'static [&'static str]> {
    MODULE_SAFE_ATTRS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, attrs)| *attrs)
}

/// Why `module.attr` is denied by [`MODULE_DENIED_ATTRS`], if it is.
pub fn module_denial(module: &str, attr: &str) -> Option<&'static str> {
    MODULE_DENIED_ATTRS
        .iter()
        .find(|(m, _)| *m == module)
        .and_then(|(_, list)| list.iter().find(|(a, _)| *a == attr))
        .map(|(_, why)| *why)
}

/// Whether a program may read `module.attr` of an imported module by the module's own
/// lists: its safe list when it has one, otherwise anything public that is not a dangerous
/// module, a side door or denied for the module. (Whether a module-valued attribute is an
/// allowed import is the policy's question, asked by the checker.)
pub fn module_attr_allowed(module: &str, attr: &str) -> bool {
    match safe_attrs(module) {
        Some(list) => list.contains(&attr),
        None => {
            !attr.starts_with('_')
                && !DANGEROUS_MODULES.contains(&attr)
                && !MODULE_SIDE_DOORS.contains(&attr)
                && module_denial(module, attr).is_none()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckRules;

    #[test]
    fn star_exports_are_listed_per_version_for_the_roots_only() {
        for version in supported_versions() {
            let m = Modules::for_version(version).unwrap();
            let json = m.star_exports("json").unwrap();
            assert!(
                json.contains(&"dumps") && !json.contains(&"decoder"),
                "{version}"
            );
            assert!(m.star_exports("math").unwrap().contains(&"floor"));
            // Dangerous modules and modules outside the roots have no list (refused).
            for none in ["sys", "os", "builtins", "io", "sched"] {
                assert!(m.star_exports(none).is_none(), "{version} {none}");
            }
        }
    }

    #[test]
    fn reachability_table_finds_and_closes_paths() {
        let none: Vec<String> = Vec::new();
        for version in supported_versions() {
            let t = Modules::for_version(version).expect("a table");
            let r = t
                .reachable_dangerous_modules("statistics", &none, true)
                .expect("known");
            // statistics imports sys from 3.11 on: the tables differ by version.
            assert_eq!(
                r.iter().any(|(m, c)| m == "sys" && c == "statistics.sys"),
                version != "3.10",
                "{version}: {r:?}"
            );
            assert!(
                r.iter()
                    .any(|(m, c)| m == "os" && c.ends_with("random._os")),
                "{version}: {r:?}"
            );
            let r = t
                .reachable_dangerous_modules("json", &none, true)
                .expect("known");
            assert!(r.iter().any(|(m, c)| m == "sys" && c == "json.codecs.sys"));
            assert_eq!(
                t.reachable_dangerous_modules("math", &none, true),
                Some(vec![])
            );
            assert_eq!(t.reachable_dangerous_modules("scipy", &none, true), None);
            let d = CheckRules::default();
            for m in &d.allowed_imports {
                let r = t.reachable_dangerous_modules(m, &d.denied_attributes, true);
                assert_eq!(r, Some(vec![]), "{version}: {m}");
            }
        }
    }

    #[test]
    fn tables_cover_3_10_to_3_13_and_nothing_else() {
        assert_eq!(supported_versions(), ["3.10", "3.11", "3.12", "3.13"]);
        assert!(Modules::for_version("3.9").is_none());
        assert!(Modules::for_version("3.14").is_none());
        assert!(supported_versions().contains(&PACKAGE_TABLE.python));
        let packages: Vec<&str> = PACKAGE_TABLE.versions.iter().map(|(p, _)| *p).collect();
        assert_eq!(packages, ["numpy", "pandas", "matplotlib"]);
        let reach: Vec<&str> = PACKAGE_TABLE.reach.iter().map(|(p, _)| *p).collect();
        assert_eq!(reach, packages);
    }

    #[test]
    fn generator_uses_the_same_dangerous_modules() {
        let script = include_str!("../../../scripts/gen-stdlib-graph.py");
        let start = script
            .find("DANGEROUS = [")
            .expect("DANGEROUS in the generator");
        let end = start + script[start..].find(']').expect("end of the list");
        let listed: Vec<&str> = script[start..end].split('"').skip(1).step_by(2).collect();
        assert_eq!(listed, DANGEROUS_MODULES);
    }

    #[test]
    fn module_edges_and_package_denials() {
        for version in supported_versions() {
            let t = Modules::for_version(version).expect("a table");
            assert_eq!(t.module_edge("numpy", "linalg"), Some("numpy.linalg"));
            assert_eq!(t.module_edge("numpy", "mean"), None);
            assert_eq!(t.module_edge("random", "_os"), Some("os"), "{version}");
        }
        assert!(package_denied_attribute("numpy", "ctypes"));
        assert!(package_denied_attribute("pandas", "style"));
        assert!(!package_denied_attribute("matplotlib", "style"));
        assert!(!module_attr_allowed("typing", "get_type_hints"));
        assert!(module_attr_allowed("typing", "Optional"));
        assert!(!module_attr_allowed("operator", "attrgetter"));
        assert!(module_attr_allowed("operator", "itemgetter"));
    }

    #[test]
    fn every_graph_target_is_known_or_dangerous() {
        for table in STDLIB_TABLES {
            for (name, edges) in table.graph {
                for (_, target) in *edges {
                    assert!(
                        DANGEROUS_MODULES.contains(target)
                            || table.graph.iter().any(|(n, _)| n == target),
                        "{}: {name}.{target}",
                        table.python
                    );
                }
            }
        }
    }
}
