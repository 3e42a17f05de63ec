//! What the CPython standard library hands a program: which modules an allowed module
//! reaches through plain attributes, and the lists the checker and `policy lint` share.

/// Modules that hand the program the host: processes, files, the import system, raw memory.
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
];

/// Which modules a stdlib module exposes as plain (non-dunder) attributes, restricted to the
/// edges that lead to a [`DANGEROUS_MODULES`] entry. Generated on CPython 3.11.2 with
/// `python3 -I -S` by importing each module and walking `dir()` for module-typed values
/// (`posix` is recorded as `os`). Modules listed with no edges were checked and reach none.
/// E.g. `json.codecs.sys`, `statistics.random._os`, `re.enum.bltns` (builtins).
pub const MODULE_ATTRIBUTE_GRAPH: &[(&str, &[(&str, &str)])] = &[
    ("abc", &[]),
    ("array", &[]),
    ("ast", &[("sys", "sys")]),
    ("base64", &[("re", "re")]),
    ("bisect", &[]),
    (
        "calendar",
        &[
            ("_locale", "locale"),
            ("datetime", "datetime"),
            ("sys", "sys"),
        ],
    ),
    ("cmath", &[]),
    ("codecs", &[("builtins", "builtins"), ("sys", "sys")]),
    (
        "collections",
        &[
            ("_collections_abc", "collections.abc"),
            ("_sys", "sys"),
            ("abc", "collections.abc"),
        ],
    ),
    ("collections.abc", &[("sys", "sys")]),
    (
        "contextlib",
        &[
            ("_collections_abc", "collections.abc"),
            ("os", "os"),
            ("sys", "sys"),
        ],
    ),
    ("copy", &[]),
    ("csv", &[("re", "re")]),
    (
        "dataclasses",
        &[
            ("builtins", "builtins"),
            ("inspect", "inspect"),
            ("re", "re"),
            ("sys", "sys"),
        ],
    ),
    ("datetime", &[("sys", "sys")]),
    ("decimal", &[]),
    ("difflib", &[]),
    (
        "dis",
        &[("collections", "collections"), ("io", "io"), ("sys", "sys")],
    ),
    (
        "encodings",
        &[
            ("codecs", "codecs"),
            ("sys", "sys"),
            ("utf_8", "encodings.utf_8"),
        ],
    ),
    ("encodings.utf_8", &[("codecs", "codecs")]),
    ("enum", &[("bltns", "builtins"), ("sys", "sys")]),
    ("fractions", &[("re", "re"), ("sys", "sys")]),
    ("functools", &[]),
    ("graphlib", &[]),
    ("hashlib", &[]),
    ("heapq", &[]),
    (
        "inspect",
        &[
            ("ast", "ast"),
            ("builtins", "builtins"),
            ("collections", "collections"),
            ("dis", "dis"),
            ("enum", "enum"),
            ("importlib", "importlib"),
            ("linecache", "linecache"),
            ("os", "os"),
            ("re", "re"),
            ("sys", "sys"),
            ("tokenize", "tokenize"),
        ],
    ),
    ("itertools", &[]),
    (
        "json",
        &[
            ("codecs", "codecs"),
            ("decoder", "json.decoder"),
            ("encoder", "json.encoder"),
            ("scanner", "json.scanner"),
        ],
    ),
    ("json.decoder", &[("re", "re"), ("scanner", "json.scanner")]),
    ("json.encoder", &[("re", "re")]),
    ("json.scanner", &[("re", "re")]),
    ("keyword", &[]),
    (
        "linecache",
        &[("os", "os"), ("sys", "sys"), ("tokenize", "tokenize")],
    ),
    (
        "locale",
        &[
            ("_collections_abc", "collections.abc"),
            ("encodings", "encodings"),
            ("re", "re"),
            ("sys", "sys"),
        ],
    ),
    ("math", &[]),
    ("numbers", &[]),
    ("operator", &[]),
    (
        "platform",
        &[
            ("collections", "collections"),
            ("os", "os"),
            ("re", "re"),
            ("sys", "sys"),
        ],
    ),
    (
        "pprint",
        &[
            ("_collections", "collections"),
            ("_dataclasses", "dataclasses"),
            ("_sys", "sys"),
            ("re", "re"),
        ],
    ),
    ("random", &[("_os", "os")]),
    ("re", &[("enum", "enum")]),
    ("secrets", &[("base64", "base64")]),
    ("statistics", &[("random", "random"), ("sys", "sys")]),
    ("string", &[("_re", "re")]),
    ("struct", &[]),
    ("textwrap", &[("re", "re")]),
    ("time", &[]),
    (
        "tokenize",
        &[("collections", "collections"), ("re", "re"), ("sys", "sys")],
    ),
    (
        "typing",
        &[
            ("collections", "collections"),
            ("contextlib", "contextlib"),
            ("stdlib_re", "re"),
            ("sys", "sys"),
            ("warnings", "warnings"),
        ],
    ),
    ("unicodedata", &[]),
    (
        "uuid",
        &[("os", "os"), ("platform", "platform"), ("sys", "sys")],
    ),
    ("warnings", &[("sys", "sys")]),
    ("zlib", &[]),
];

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

/// Whether the checker denies attribute `attr` whatever the policy says.
pub fn always_denied_attribute(attr: &str) -> bool {
    FRAME_ATTRIBUTES.contains(&attr) || INTERNAL_ATTRIBUTES.contains(&attr)
}

/// Dangerous modules `module` reaches through plain attribute chains, with the chain, when
/// no attribute on the way is denied. `None` when the module is not in the table.
pub fn reachable_dangerous_modules(
    module: &str,
    denied_attributes: &[String],
    deny_dunder: bool,
) -> Option<Vec<(String, String)>> {
    let edges_of = |m: &str| {
        MODULE_ATTRIBUTE_GRAPH
            .iter()
            .find(|(name, _)| *name == m)
            .map(|(_, e)| *e)
    };
    edges_of(module)?;
    let blocked = |attr: &str| {
        denied_attributes.iter().any(|d| d == attr) || (deny_dunder && attr.starts_with("__"))
    };
    let mut found: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<String> = vec![module.to_string()];
    let mut queue: std::collections::VecDeque<(String, String)> =
        std::collections::VecDeque::from([(module.to_string(), module.to_string())]);
    while let Some((m, path)) = queue.pop_front() {
        for (attr, target) in edges_of(&m).unwrap_or(&[]) {
            if blocked(attr) || seen.iter().any(|s| s == target) {
                continue;
            }
            seen.push((*target).to_string());
            let chain = format!("{path}.{attr}");
            if DANGEROUS_MODULES.contains(target) {
                found.push(((*target).to_string(), chain));
            } else {
                queue.push_back(((*target).to_string(), chain));
            }
        }
    }
    Some(found)
}

/// Safe lists for modules whose namespace re-exports dangerous things (Python 3.11).
/// `json` re-exports `codecs`, `decoder`, `encoder`, `scanner`; `statistics` re-exports
/// `sys`, `random`, `math`, `numbers`, `Fraction`, `Decimal`, `namedtuple`, ... Only the
/// documented API (the modules' `__all__`) is allowed.
const MODULE_SAFE_ATTRS: [(&str, &[&str]); 2] = [
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
];

/// For allowed modules without a safe list: attributes that are known side doors, besides
/// the [`DANGEROUS_MODULES`] themselves.
const MODULE_SIDE_DOORS: [&str; 16] = [
    "codecs",
    "posix",
    "signal",
    "types",
    "inspect",
    "gc",
    "marshal",
    "pickle",
    "runpy",
    "pty",
    "tempfile",
    "mmap",
    "decoder",
    "encoder",
    "scanner",
    "Formatter",
];

fn safe_attrs(module: &str) -> Option<&'static [&'static str]> {
    MODULE_SAFE_ATTRS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, attrs)| *attrs)
}

/// Whether a program may read `module.attr` of an imported module: the module's safe list
/// when it has one, otherwise anything public that is not a side door.
pub fn module_attr_allowed(module: &str, attr: &str) -> bool {
    match safe_attrs(module) {
        Some(list) => list.contains(&attr),
        None => {
            !attr.starts_with('_')
                && !DANGEROUS_MODULES.contains(&attr)
                && !MODULE_SIDE_DOORS.contains(&attr)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn reachability_table_finds_and_closes_paths() {
        let none: Vec<String> = Vec::new();
        let r = reachable_dangerous_modules("statistics", &none, true).expect("known");
        assert!(r.iter().any(|(m, c)| m == "sys" && c == "statistics.sys"));
        assert!(r
            .iter()
            .any(|(m, c)| m == "os" && c == "statistics.random._os"));
        let r = reachable_dangerous_modules("json", &none, true).expect("known");
        assert!(r.iter().any(|(m, c)| m == "sys" && c == "json.codecs.sys"));
        assert_eq!(
            reachable_dangerous_modules("math", &none, true),
            Some(vec![])
        );
        assert_eq!(reachable_dangerous_modules("numpy", &none, true), None);
        let d = Policy::default();
        for m in &d.check.allowed_imports {
            let r = reachable_dangerous_modules(m, &d.check.denied_attributes, true);
            assert_eq!(r, Some(vec![]), "{m}");
        }
    }

    #[test]
    fn every_graph_target_is_known_or_dangerous() {
        for (_, edges) in MODULE_ATTRIBUTE_GRAPH {
            for (_, target) in *edges {
                assert!(
                    DANGEROUS_MODULES.contains(target)
                        || MODULE_ATTRIBUTE_GRAPH.iter().any(|(n, _)| n == target),
                    "{target}"
                );
            }
        }
    }
}
