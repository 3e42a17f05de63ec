//! Rules 10-12: test shapes that let a test pass for the wrong reason (docs/TESTING.md), in
//! tests/ and crates/*/tests/.

use syn::visit::{self, Visit};
use syn::{Expr, Stmt};

use crate::facts::{has_test_attr, line, FileFacts, RefKind};
use crate::report::Rule;

/// A shape found: its rule, its line, what it is.
#[derive(Clone, Debug)]
pub struct Hit {
    pub rule: Rule,
    pub line: usize,
    pub what: String,
}

/// Helpers that skip loudly (and fail under CI=true where the feature is required).
const LOUD: &[&str] = &[
    "require_feature(",
    "abi_or_skip(",
    "root_only(",
    "zygote_built(",
    "node_available(",
    "can_build_layouts(",
    "x86_64(",
    "missing(",
    "degraded_as_unprivileged(",
    "eprintln!",
];
/// Iterator methods whose closure is a polling loop (`(0..n).find_map(|_| { ..; sleep })`).
const POLLING: &[&str] = &[
    "find_map",
    "find",
    "any",
    "all",
    "position",
    "take_while",
    "for_each",
];
/// How far below `#[test]` a return still counts as the test's start.
const SKIP_WINDOW: usize = 8;
/// A sleep this close below the start of a polling loop waits on that loop's account.
const POLL_WINDOW: usize = 30;

pub fn check(ast: &syn::File, text: &str, facts: &FileFacts) -> Vec<Hit> {
    let lines: Vec<&str> = text.lines().collect();
    let mut hits = any_exception(facts);
    let sleep_imported = facts
        .refs
        .iter()
        .any(|r| r.kind == RefKind::Use && r.segs.ends_with(&["thread".into(), "sleep".into()]));
    let mut v = Walk {
        lines: &lines,
        hits: Vec::new(),
        polling: 0,
        loops: Vec::new(),
        sleep_imported,
    };
    v.visit_file(ast);
    hits.append(&mut v.hits);
    hits
}

/// Rule 10: a Python payload (a string literal) whose handler catches any exception
/// (`except Exception`, `except BaseException`, a bare `except:`) and prints BLOCKED.
fn any_exception(facts: &FileFacts) -> Vec<Hit> {
    let mut hits = Vec::new();
    for s in &facts.strings {
        let lines: Vec<&str> = s.value.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let near = lines[i..lines.len().min(i + 3)].join("\n");
            if catches_anything(l) && near.contains("BLOCKED") {
                let what = format!("`{}` reports BLOCKED", l.trim());
                // A literal over several source lines has the payload's lines; a one-line
                // literal (`\n` escapes) has them all on its own line.
                let at = if s.end_line > s.line {
                    s.line + i
                } else {
                    s.line
                };
                hits.push(Hit {
                    rule: Rule::AnyException,
                    line: at,
                    what,
                });
            }
        }
    }
    hits
}

/// `except:`, `except Exception:`, `except (OSError, BaseException) as e:`.
fn catches_anything(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("except") else {
        return false;
    };
    if !rest.starts_with([' ', ':', '(']) {
        return false;
    }
    let Some((names, _)) = rest.split_once(':') else {
        return false;
    };
    let names = names.split(" as ").next().unwrap_or("");
    names.trim().is_empty()
        || names
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == "Exception" || w == "BaseException")
}

struct Walk<'a> {
    lines: &'a [&'a str],
    hits: Vec<Hit>,
    /// Inside a loop, or a polling iterator's closure.
    polling: usize,
    /// The lines polling loops start on, so far.
    loops: Vec<usize>,
    sleep_imported: bool,
}

impl Walk<'_> {
    /// The source lines `from..=to` (1-based) hold `needle`.
    fn says(&self, from: usize, to: usize, needle: &str) -> bool {
        let from = from.saturating_sub(1);
        self.lines
            .get(from..to.min(self.lines.len()))
            .is_some_and(|ls| ls.iter().any(|l| l.contains(needle)))
    }

    /// Rule 11: the statements starting within SKIP_WINDOW lines of `#[test]`.
    fn silent_skips(&mut self, test_line: usize, block: &syn::Block) {
        for stmt in &block.stmts {
            let Stmt::Expr(Expr::If(guard), _) = stmt else {
                continue;
            };
            let (from, to) = if_lines(guard);
            if from > test_line + SKIP_WINDOW {
                continue;
            }
            let mut returns = Returns(Vec::new());
            returns.visit_stmt(stmt);
            let loud = LOUD.iter().any(|h| self.says(from, to, h));
            for r in returns.0 {
                if !loud && !self.says(from.saturating_sub(4), r, "// not a skip:") {
                    self.hits.push(Hit {
                        rule: Rule::SilentSkip,
                        line: r,
                        what: "the test returns before it tests anything, saying nothing".into(),
                    });
                }
            }
        }
    }
}

/// The first and last lines of an `if` (its `else` branches included).
fn if_lines(e: &syn::ExprIf) -> (usize, usize) {
    let end = match e.else_branch.as_ref().map(|(_, b)| &**b) {
        Some(Expr::If(inner)) => if_lines(inner).1,
        Some(Expr::Block(b)) => b.block.brace_token.span.close().end().line,
        _ => e.then_branch.brace_token.span.close().end().line,
    };
    (line(e.if_token.span), end)
}

/// Bare `return`s (no value) in a statement, closures and nested functions aside.
struct Returns(Vec<usize>);

impl<'ast> Visit<'ast> for Returns {
    fn visit_expr_return(&mut self, r: &'ast syn::ExprReturn) {
        if r.expr.is_none() {
            self.0.push(line(r.return_token.span));
        }
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_item_fn(&mut self, _: &'ast syn::ItemFn) {}
}

impl<'ast> Visit<'ast> for Walk<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if has_test_attr(&f.attrs) {
            let attr = f.attrs.iter().find(|a| {
                a.path().is_ident("test")
                    || a.path().segments.last().is_some_and(|s| s.ident == "test")
            });
            let test_line = attr.map_or(line(f.sig.fn_token.span), |a| line(a.pound_token.span));
            self.silent_skips(test_line, &f.block);
        }
        visit::visit_item_fn(self, f);
    }

    fn visit_expr_loop(&mut self, e: &'ast syn::ExprLoop) {
        self.loops.push(line(e.loop_token.span));
        self.polling += 1;
        visit::visit_expr_loop(self, e);
        self.polling -= 1;
    }

    fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
        self.loops.push(line(e.while_token.span));
        self.polling += 1;
        visit::visit_expr_while(self, e);
        self.polling -= 1;
    }

    fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
        self.loops.push(line(e.for_token.span));
        self.polling += 1;
        visit::visit_expr_for_loop(self, e);
        self.polling -= 1;
    }

    fn visit_expr_method_call(&mut self, e: &'ast syn::ExprMethodCall) {
        let polls = POLLING.contains(&e.method.to_string().as_str());
        if polls {
            self.loops.push(line(e.method.span()));
        }
        self.polling += usize::from(polls);
        visit::visit_expr_method_call(self, e);
        self.polling -= usize::from(polls);
    }

    /// Rule 12: `thread::sleep` outside a polling loop (in one, or within POLL_WINDOW lines
    /// below one's start: waiting out what the loop saw), without a `// sleep:` comment.
    fn visit_expr_call(&mut self, e: &'ast syn::ExprCall) {
        if let Expr::Path(p) = &*e.func {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let n = segs.len();
            let sleep = segs.last().is_some_and(|s| s == "sleep")
                && ((n >= 2 && segs[n - 2] == "thread") || (n == 1 && self.sleep_imported));
            let l = line(p.path.segments[0].ident.span());
            let after_loop = self.loops.iter().any(|s| *s <= l && l - s <= POLL_WINDOW);
            if sleep
                && self.polling == 0
                && !after_loop
                && !self.says(l.saturating_sub(4), l.saturating_sub(1), "// sleep:")
            {
                self.hits.push(Hit {
                    rule: Rule::BareSleep,
                    line: l,
                    what: "a sleep outside a polling loop decides when the test looks".into(),
                });
            }
        }
        visit::visit_expr_call(self, e);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let parser = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
        if let Ok(args) = m.parse_body_with(parser) {
            args.iter().for_each(|a| self.visit_expr(a));
        }
    }
}
