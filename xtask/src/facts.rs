//! One walk over a parsed file: what the rules need of it. Paths are kept as written (the
//! scope they were written in beside them); `modules` resolves them.

use proc_macro2::{LineColumn, Span};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, Expr, Token, UseTree, Visibility};

pub fn line(span: Span) -> usize {
    span.start().line
}

fn end_line(span: Span) -> usize {
    let LineColumn { line, .. } = span.end();
    line
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RefKind {
    /// `use a::b` (or `use a::b as c`): binds a name.
    Use,
    /// `use a::b::*`.
    Glob,
    /// A path in an expression, a type or a pattern: `a::b::c`.
    Path,
    /// The function of a call expression: `a::b(..)`.
    Call,
}

/// A path the file names, and where.
#[derive(Clone, Debug)]
pub struct Ref {
    /// The inline modules (`mod x { .. }`) around it, outermost first.
    pub scope: Vec<String>,
    pub segs: Vec<String>,
    /// The name a `use` binds (its last segment, or its `as` rename).
    pub alias: Option<String>,
    pub kind: RefKind,
    pub line: usize,
    /// Inside `#[cfg(test)]` or a `#[test]` function.
    pub test: bool,
}

/// `mod name;` or `mod name { .. }`.
#[derive(Clone, Debug)]
pub struct ModDecl {
    pub scope: Vec<String>,
    pub name: String,
    pub inline: bool,
    pub path_attr: Option<String>,
    pub public: bool,
    pub test: bool,
}

#[derive(Clone, Debug)]
pub struct FnFact {
    /// `name`, or `Type::name` for a method.
    pub name: String,
    pub fn_line: usize,
    /// The first line of its attributes and doc comment (its `fn` line when it has none).
    pub first_line: usize,
    pub end_line: usize,
    /// Test code: under `#[cfg(test)]`, or a `#[test]` function (or inside one).
    pub test: bool,
    /// Under `#[cfg(test)]` (a test module), which rule 6 leaves alone.
    pub cfg_test: bool,
    /// A `pub fn` at module level, in an inherent impl, or in a trait, inside `pub` inline
    /// modules only: part of the crate's API when its file's module is public.
    pub api: bool,
    pub returns_string_err: bool,
}

#[derive(Clone, Debug)]
pub struct UnsafeSite {
    pub line: usize,
    pub what: &'static str,
}

/// A string literal's value (payloads in tests).
#[derive(Clone, Debug)]
pub struct StrLit {
    pub line: usize,
    pub end_line: usize,
    pub value: String,
}

#[derive(Default, Debug)]
pub struct FileFacts {
    pub refs: Vec<Ref>,
    pub mods: Vec<ModDecl>,
    pub fns: Vec<FnFact>,
    pub unsafes: Vec<UnsafeSite>,
    pub strings: Vec<StrLit>,
}

pub fn collect(file: &syn::File) -> FileFacts {
    let mut c = Collector::default();
    c.visit_file(file);
    c.facts
}

#[derive(Default)]
struct Collector {
    facts: FileFacts,
    scope: Vec<String>,
    /// Every inline module around is `pub`.
    scope_pub: Vec<bool>,
    test: usize,
    cfg_test: usize,
    /// The impl around: its self type's name and whether it implements a trait.
    owner: Vec<(String, bool)>,
}

/// `#[cfg(test)]` (and `cfg(all(test, ..))`), not `cfg(not(test))`.
pub fn is_cfg_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        if !a.path().is_ident("cfg") {
            return false;
        }
        let Ok(list) = a.meta.require_list() else {
            return false;
        };
        let text = list.tokens.to_string();
        !text.contains("not")
            && text
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == "test")
    })
}

pub fn has_test_attr(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test") || a.path().segments.last().is_some_and(|s| s.ident == "test")
    })
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

fn first_line(attrs: &[Attribute], fallback: usize) -> usize {
    attrs
        .iter()
        .map(|a| line(a.pound_token.span))
        .chain([fallback])
        .min()
        .unwrap_or(fallback)
}

/// `Result<_, String>`, however `Result` and `String` are spelled.
fn is_string_err(output: &syn::ReturnType) -> bool {
    let syn::ReturnType::Type(_, ty) = output else {
        return false;
    };
    let syn::Type::Path(tp) = &**ty else {
        return false;
    };
    let Some(last) = tp.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    if last.ident != "Result" || args.args.len() != 2 {
        return false;
    }
    matches!(&args.args[1], syn::GenericArgument::Type(syn::Type::Path(e))
        if e.qself.is_none() && e.path.segments.last().is_some_and(|s| s.ident == "String" && s.arguments.is_none()))
}

fn segs(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

impl Collector {
    fn push_ref(&mut self, segs: Vec<String>, alias: Option<String>, kind: RefKind, line: usize) {
        let r = Ref {
            scope: self.scope.clone(),
            segs,
            alias,
            kind,
            line,
            test: self.test > 0,
        };
        self.facts.refs.push(r);
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &UseTree) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            UseTree::Name(n) => {
                let (segs, alias) = if n.ident == "self" {
                    (prefix.clone(), prefix.last().cloned())
                } else {
                    let mut s = prefix.clone();
                    s.push(n.ident.to_string());
                    (s, Some(n.ident.to_string()))
                };
                self.push_ref(segs, alias, RefKind::Use, line(n.ident.span()));
            }
            UseTree::Rename(r) => {
                let mut s = prefix.clone();
                if r.ident != "self" {
                    s.push(r.ident.to_string());
                }
                self.push_ref(
                    s,
                    Some(r.rename.to_string()),
                    RefKind::Use,
                    line(r.ident.span()),
                );
            }
            UseTree::Glob(g) => {
                self.push_ref(prefix.clone(), None, RefKind::Glob, line(g.star_token.span))
            }
            UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }

    fn fn_fact(
        &mut self,
        name: String,
        attrs: &[Attribute],
        sig: &syn::Signature,
        end: usize,
        api: bool,
    ) {
        let fn_line = line(sig.fn_token.span);
        let fact = FnFact {
            name,
            fn_line,
            first_line: first_line(attrs, fn_line),
            end_line: end,
            test: self.test > 0 || is_cfg_test(attrs) || has_test_attr(attrs),
            cfg_test: self.cfg_test > 0 || is_cfg_test(attrs),
            api: api && self.scope_pub.iter().all(|p| *p),
            returns_string_err: is_string_err(&sig.output),
        };
        self.facts.fns.push(fact);
        if let Some(u) = &sig.unsafety {
            self.facts.unsafes.push(UnsafeSite {
                line: line(u.span),
                what: "unsafe fn",
            });
        }
    }

    /// Walks `f` as test code when `test` (`#[test]`), and as a test module when `cfg`.
    fn with_test<F: FnOnce(&mut Self)>(&mut self, test: bool, cfg: bool, f: F) {
        self.test += usize::from(test || cfg);
        self.cfg_test += usize::from(cfg);
        f(self);
        self.test -= usize::from(test || cfg);
        self.cfg_test -= usize::from(cfg);
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let test = is_cfg_test(&m.attrs);
        let public = matches!(m.vis, Visibility::Public(_));
        self.facts.mods.push(ModDecl {
            scope: self.scope.clone(),
            name: m.ident.to_string(),
            inline: m.content.is_some(),
            path_attr: path_attr(&m.attrs),
            public,
            test: test || self.test > 0,
        });
        if let Some((_, items)) = &m.content {
            self.scope.push(m.ident.to_string());
            self.scope_pub.push(public);
            self.with_test(false, test, |c| items.iter().for_each(|i| c.visit_item(i)));
            self.scope_pub.pop();
            self.scope.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.with_test(false, is_cfg_test(&u.attrs), |c| {
            c.use_tree(&mut Vec::new(), &u.tree)
        });
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.len() >= 2 {
            let l = line(p.segments[0].ident.span());
            self.push_ref(segs(p), None, RefKind::Path, l);
        }
        visit::visit_path(self, p);
    }

    fn visit_expr_call(&mut self, e: &'ast syn::ExprCall) {
        if let Expr::Path(p) = &*e.func {
            let l = line(p.path.segments[0].ident.span());
            self.push_ref(segs(&p.path), None, RefKind::Call, l);
        }
        visit::visit_expr_call(self, e);
    }

    /// A macro's arguments, when they read as expressions (`format!`, `assert!`, `vec!`...).
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        if let Ok(args) = m.parse_body_with(parser) {
            args.iter().for_each(|a| self.visit_expr(a));
        }
    }

    fn visit_lit_str(&mut self, s: &'ast syn::LitStr) {
        let (line, end_line) = (line(s.span()), end_line(s.span()));
        self.facts.strings.push(StrLit {
            line,
            end_line,
            value: s.value(),
        });
    }

    fn visit_expr_unsafe(&mut self, e: &'ast syn::ExprUnsafe) {
        self.facts.unsafes.push(UnsafeSite {
            line: line(e.unsafe_token.span),
            what: "unsafe block",
        });
        visit::visit_expr_unsafe(self, e);
    }

    fn visit_item_foreign_mod(&mut self, f: &'ast syn::ItemForeignMod) {
        let l = line(f.abi.extern_token.span);
        self.facts.unsafes.push(UnsafeSite {
            line: l,
            what: "extern block",
        });
        visit::visit_item_foreign_mod(self, f);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let api = matches!(f.vis, Visibility::Public(_));
        let end = end_line(f.block.brace_token.span.close());
        self.fn_fact(f.sig.ident.to_string(), &f.attrs, &f.sig, end, api);
        self.with_test(has_test_attr(&f.attrs), is_cfg_test(&f.attrs), |c| {
            visit::visit_item_fn(c, f)
        });
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if let Some(u) = &i.unsafety {
            self.facts.unsafes.push(UnsafeSite {
                line: line(u.span),
                what: "unsafe impl",
            });
        }
        let owner = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.owner
            .push((owner.unwrap_or_else(|| "_".into()), i.trait_.is_some()));
        self.with_test(false, is_cfg_test(&i.attrs), |c| {
            visit::visit_item_impl(c, i)
        });
        self.owner.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let (owner, of_trait) = self.owner.last().cloned().unwrap_or_default();
        let api = !of_trait && matches!(f.vis, Visibility::Public(_));
        let end = end_line(f.block.brace_token.span.close());
        self.fn_fact(
            format!("{owner}::{}", f.sig.ident),
            &f.attrs,
            &f.sig,
            end,
            api,
        );
        self.with_test(has_test_attr(&f.attrs), is_cfg_test(&f.attrs), |c| {
            visit::visit_impl_item_fn(c, f)
        });
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if let Some(u) = &t.unsafety {
            self.facts.unsafes.push(UnsafeSite {
                line: line(u.span),
                what: "unsafe trait",
            });
        }
        let public = matches!(t.vis, Visibility::Public(_));
        self.owner.push((t.ident.to_string(), !public));
        visit::visit_item_trait(self, t);
        self.owner.pop();
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        let (owner, private) = self.owner.last().cloned().unwrap_or_default();
        let end = f.default.as_ref().map_or(line(f.sig.fn_token.span), |b| {
            end_line(b.brace_token.span.close())
        });
        self.fn_fact(
            format!("{owner}::{}", f.sig.ident),
            &f.attrs,
            &f.sig,
            end,
            !private,
        );
        visit::visit_trait_item_fn(self, f);
    }
}
