//! Evaluating a compiled schema against one instance, under a step budget.
//!
//! One recursive walk. In *report* mode the first failing assertion becomes the answer;
//! in *boolean* mode (branches of `anyOf`, `oneOf`, `not`, `if`, `contains`) a failure is
//! just `false`, with no message built, so nothing like an error tree ever exists.

use super::compile::{
    Keywords, Node, T_ARRAY, T_BOOL, T_INTEGER, T_NULL, T_NUMBER, T_OBJECT, T_STRING,
};
use super::number::Decimal;
use super::{ValidationFailure, MAX_EVAL_DEPTH};
use crate::strict::{push_pointer_token, safe_text};
use serde_json::{Map, Number, Value};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

/// Stack kept free before each nested evaluation, and the size of each extension.
const RED_ZONE: usize = 128 * 1024;
const STACK_GROWTH: usize = 2 * 1024 * 1024;
/// Steps between two calls of the interrupt callback.
const POLL_EVERY: u64 = 1024;

/// Why evaluation stopped early.
enum Stop {
    /// Boolean mode: the value does not match (no details).
    No,
    Invalid {
        pointer: String,
        keyword: &'static str,
        message: String,
    },
    Budget,
    Interrupted,
}

type Res = Result<(), Stop>;

/// One step of the instance pointer.
enum Seg<'i> {
    Index(usize),
    Key(&'i str),
}

struct Validator<'s, 'i, 'f> {
    nodes: &'s [Node],
    steps: u64,
    max_steps: u64,
    next_poll: u64,
    interrupt: &'f mut dyn FnMut() -> bool,
    path: Vec<Seg<'i>>,
    depth: usize,
}

pub(super) fn run(
    nodes: &[Node],
    root: usize,
    max_steps: u64,
    instance: &Value,
    interrupt: &mut dyn FnMut() -> bool,
) -> Result<(), ValidationFailure> {
    let mut v = Validator {
        nodes,
        steps: 0,
        max_steps,
        next_poll: POLL_EVERY,
        interrupt,
        path: Vec::new(),
        depth: 0,
    };
    match v.eval(root, instance, true) {
        Ok(()) => Ok(()),
        Err(Stop::Invalid {
            pointer,
            keyword,
            message,
        }) => Err(ValidationFailure::Invalid {
            pointer,
            keyword,
            message,
        }),
        // Report mode never yields a bare "no"; should it, fail closed at the root.
        Err(Stop::No) => Err(ValidationFailure::Invalid {
            pointer: String::new(),
            keyword: "schema",
            message: "the value does not match the schema".into(),
        }),
        Err(Stop::Budget) => Err(ValidationFailure::Budget),
        Err(Stop::Interrupted) => Err(ValidationFailure::Interrupted),
    }
}

fn decimal(n: &Number) -> Result<Decimal, Stop> {
    Decimal::from_number(n).ok_or(Stop::Budget)
}

/// A short, printable rendering of an instance value for messages.
fn show(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => safe_text(&n.to_string(), 40),
        Value::String(s) => format!("\"{}\"", safe_text(s, 40)),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object with {} properties", o.len()),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_names(mask: u8) -> String {
    let all = [
        (T_NULL, "null"),
        (T_BOOL, "boolean"),
        (T_OBJECT, "object"),
        (T_ARRAY, "array"),
        (T_NUMBER, "number"),
        (T_INTEGER, "integer"),
        (T_STRING, "string"),
    ];
    let names: Vec<&str> = all
        .iter()
        .filter(|(b, _)| mask & b != 0)
        .map(|(_, n)| *n)
        .collect();
    names.join(" or ")
}

impl<'s, 'i> Validator<'s, 'i, '_> {
    /// Charge `n` work units; poll the interrupt every [`POLL_EVERY`].
    fn step(&mut self, n: u64) -> Res {
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.max_steps {
            return Err(Stop::Budget);
        }
        if self.steps >= self.next_poll {
            self.next_poll = (self.steps / POLL_EVERY + 1).saturating_mul(POLL_EVERY);
            if (self.interrupt)() {
                return Err(Stop::Interrupted);
            }
        }
        Ok(())
    }

    fn pointer(&self) -> String {
        let mut p = String::new();
        for seg in &self.path {
            match seg {
                Seg::Index(i) => push_pointer_token(&mut p, &i.to_string()),
                Seg::Key(k) => push_pointer_token(&mut p, k),
            }
        }
        p
    }

    /// A failure at the current value (only built in report mode).
    fn fail(&self, report: bool, keyword: &'static str, message: impl FnOnce() -> String) -> Stop {
        if !report {
            return Stop::No;
        }
        Stop::Invalid {
            pointer: self.pointer(),
            keyword,
            message: message(),
        }
    }

    /// A failure at member `key` of the current value (missing or refused properties).
    fn fail_member(
        &self,
        report: bool,
        key: &str,
        keyword: &'static str,
        message: impl FnOnce() -> String,
    ) -> Stop {
        if !report {
            return Stop::No;
        }
        let mut pointer = self.pointer();
        push_pointer_token(&mut pointer, key);
        Stop::Invalid {
            pointer,
            keyword,
            message: message(),
        }
    }

    /// Apply node `node` to `inst`, with the recursion cap and a stack that grows.
    fn eval(&mut self, node: usize, inst: &'i Value, report: bool) -> Res {
        self.step(1)?;
        if self.depth >= MAX_EVAL_DEPTH {
            return Err(Stop::Budget);
        }
        self.depth += 1;
        let r = stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
            self.eval_node(node, inst, report)
        });
        self.depth -= 1;
        r
    }

    fn eval_node(&mut self, node: usize, inst: &'i Value, report: bool) -> Res {
        let nodes = self.nodes;
        match nodes.get(node) {
            Some(Node::Bool(true)) | None => Ok(()),
            Some(Node::Bool(false)) => Err(self.fail(report, "false", || {
                "no value is allowed here (the schema is false)".into()
            })),
            Some(Node::Schema(k)) => self.keywords(k, inst, report),
        }
    }

    /// Apply `node` to a child of the current value.
    fn eval_child(&mut self, node: usize, seg: Seg<'i>, inst: &'i Value, report: bool) -> Res {
        self.path.push(seg);
        let r = self.eval(node, inst, report);
        self.path.pop();
        r
    }

    /// Boolean mode: does `inst` match `node`?
    fn test(&mut self, node: usize, inst: &'i Value) -> Result<bool, Stop> {
        match self.eval(node, inst, false) {
            Ok(()) => Ok(true),
            Err(Stop::No) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn keywords(&mut self, k: &'s Keywords, inst: &'i Value, report: bool) -> Res {
        if let Some(mask) = k.types {
            self.step(1)?;
            if !self.type_matches(mask, inst)? {
                return Err(self.fail(report, "type", || {
                    format!("expected {}, got {}", type_names(mask), type_name(inst))
                }));
            }
        }
        if let Some(c) = &k.const_ {
            self.step(1)?;
            if !self.equal(c, inst, 0)? {
                return Err(self.fail(report, "const", || {
                    format!("{} is not the schema's const value", show(inst))
                }));
            }
        }
        if let Some(values) = &k.enum_ {
            self.step(1)?;
            let mut found = false;
            for v in values {
                if self.equal(v, inst, 0)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Err(self.fail(report, "enum", || {
                    format!(
                        "{} is not one of the {} allowed values",
                        show(inst),
                        values.len()
                    )
                }));
            }
        }
        match inst {
            Value::Number(n) => self.numeric(k, n, report)?,
            Value::String(s) => self.string(k, s, report)?,
            Value::Array(a) => self.array(k, a, report)?,
            Value::Object(o) => self.object(k, o, report)?,
            Value::Null | Value::Bool(_) => {}
        }
        self.in_place(k, inst, report)
    }

    fn type_matches(&mut self, mask: u8, inst: &Value) -> Result<bool, Stop> {
        let bit = match inst {
            Value::Null => T_NULL,
            Value::Bool(_) => T_BOOL,
            Value::Object(_) => T_OBJECT,
            Value::Array(_) => T_ARRAY,
            Value::String(_) => T_STRING,
            Value::Number(n) => {
                if mask & T_NUMBER != 0 {
                    return Ok(true);
                }
                return Ok(mask & T_INTEGER != 0 && decimal(n)?.is_integer());
            }
        };
        Ok(mask & bit != 0)
    }

    fn numeric(&mut self, k: &Keywords, n: &Number, report: bool) -> Res {
        let bounds = [
            (&k.maximum, "maximum"),
            (&k.exclusive_maximum, "exclusiveMaximum"),
            (&k.minimum, "minimum"),
            (&k.exclusive_minimum, "exclusiveMinimum"),
        ];
        if k.multiple_of.is_none() && bounds.iter().all(|(b, _)| b.is_none()) {
            return Ok(());
        }
        let d = decimal(n)?;
        for (bound, keyword) in bounds {
            let Some(b) = bound else { continue };
            self.step(1)?;
            let ok = match keyword {
                "maximum" => d <= *b,
                "exclusiveMaximum" => d < *b,
                "minimum" => d >= *b,
                _ => d > *b,
            };
            if !ok {
                let (rel, shown) = match keyword {
                    "maximum" => ("at most", b),
                    "exclusiveMaximum" => ("less than", b),
                    "minimum" => ("at least", b),
                    _ => ("greater than", b),
                };
                return Err(self.fail(report, keyword, || {
                    format!("{} must be {rel} {shown}", safe_text(&n.to_string(), 40))
                }));
            }
        }
        if let Some(m) = &k.multiple_of {
            self.step(1)?;
            if !d.is_multiple_of(m) {
                return Err(self.fail(report, "multipleOf", || {
                    format!("{} is not a multiple of {m}", safe_text(&n.to_string(), 40))
                }));
            }
        }
        Ok(())
    }

    fn string(&mut self, k: &Keywords, s: &str, report: bool) -> Res {
        if k.max_length.is_some() || k.min_length.is_some() {
            self.step(1 + s.len() as u64 / 64)?;
            let len = s.chars().count() as u64;
            if let Some(max) = k.max_length.filter(|&m| len > m) {
                return Err(self.fail(report, "maxLength", || {
                    format!("the string has {len} characters; at most {max} are allowed")
                }));
            }
            if let Some(min) = k.min_length.filter(|&m| len < m) {
                return Err(self.fail(report, "minLength", || {
                    format!("the string has {len} characters; at least {min} are required")
                }));
            }
        }
        if let Some(p) = &k.pattern {
            self.step(p.cost(s))?;
            if !p.is_match(s) {
                return Err(self.fail(report, "pattern", || {
                    format!(
                        "\"{}\" does not match the schema's pattern",
                        safe_text(s, 40)
                    )
                }));
            }
        }
        Ok(())
    }

    fn array(&mut self, k: &'s Keywords, a: &'i [Value], report: bool) -> Res {
        let len = a.len() as u64;
        if let Some(max) = k.max_items {
            self.step(1)?;
            if len > max {
                return Err(self.fail(report, "maxItems", || {
                    format!("the array has {len} items; at most {max} are allowed")
                }));
            }
        }
        if let Some(min) = k.min_items {
            self.step(1)?;
            if len < min {
                return Err(self.fail(report, "minItems", || {
                    format!("the array has {len} items; at least {min} are required")
                }));
            }
        }
        if k.unique_items {
            self.unique(a, report)?;
        }
        for (i, (&node, item)) in k.prefix_items.iter().zip(a).enumerate() {
            self.eval_child(node, Seg::Index(i), item, report)?;
        }
        if let Some(node) = k.items {
            let first = k.prefix_items.len();
            if matches!(self.nodes.get(node), Some(Node::Bool(false))) && a.len() > first {
                return Err(self.fail(report, "items", || {
                    format!("the array has {len} items; at most {first} are allowed")
                }));
            }
            for (i, item) in a.iter().enumerate().skip(first) {
                self.eval_child(node, Seg::Index(i), item, report)?;
            }
        }
        if let Some(node) = k.contains {
            self.contains(k, node, a, report)?;
        }
        Ok(())
    }

    fn contains(&mut self, k: &Keywords, node: usize, a: &'i [Value], report: bool) -> Res {
        let min = k.min_contains.unwrap_or(1);
        let mut count = 0u64;
        for (i, item) in a.iter().enumerate() {
            if k.max_contains.is_none() && count >= min {
                break;
            }
            self.path.push(Seg::Index(i));
            let hit = self.test(node, item);
            self.path.pop();
            if hit? {
                count += 1;
            }
            if k.max_contains.is_some_and(|m| count > m) {
                break;
            }
        }
        if count < min {
            let keyword = if k.min_contains.is_some() {
                "minContains"
            } else {
                "contains"
            };
            return Err(self.fail(report, keyword, || {
                format!("{count} items match contains; at least {min} must")
            }));
        }
        if let Some(max) = k.max_contains.filter(|&m| count > m) {
            return Err(self.fail(report, "maxContains", || {
                format!("more than {max} items match contains")
            }));
        }
        Ok(())
    }

    /// `uniqueItems`: hash every item (numbers by exact value, objects order-free), sort,
    /// and compare only items whose hashes collide. Each comparison is charged.
    fn unique(&mut self, a: &[Value], report: bool) -> Res {
        let state = RandomState::new();
        let mut hashes: Vec<(u64, usize)> = Vec::with_capacity(a.len());
        for (i, item) in a.iter().enumerate() {
            hashes.push((self.hash_value(item, &state, 0)?, i));
        }
        // Sorting u64 pairs costs little next to hashing the items; charge it per item.
        self.step(a.len() as u64)?;
        hashes.sort_unstable();
        for group in hashes.chunk_by(|x, y| x.0 == y.0) {
            for (n, &(_, i)) in group.iter().enumerate() {
                for &(_, j) in group.iter().skip(n + 1) {
                    let (Some(x), Some(y)) = (a.get(i), a.get(j)) else {
                        continue;
                    };
                    self.step(1)?;
                    if self.equal(x, y, 0)? {
                        let (i, j) = (i.min(j), i.max(j));
                        return Err(self.fail(report, "uniqueItems", || {
                            format!("items {i} and {j} are equal")
                        }));
                    }
                }
            }
        }
        Ok(())
    }

    fn object(&mut self, k: &'s Keywords, o: &'i Map<String, Value>, report: bool) -> Res {
        let len = o.len() as u64;
        if let Some(max) = k.max_properties {
            self.step(1)?;
            if len > max {
                return Err(self.fail(report, "maxProperties", || {
                    format!("the object has {len} properties; at most {max} are allowed")
                }));
            }
        }
        if let Some(min) = k.min_properties {
            self.step(1)?;
            if len < min {
                return Err(self.fail(report, "minProperties", || {
                    format!("the object has {len} properties; at least {min} are required")
                }));
            }
        }
        for name in &k.required {
            self.step(1)?;
            if !o.contains_key(name) {
                return Err(self.fail_member(report, name, "required", || {
                    format!("required property \"{}\" is missing", safe_text(name, 60))
                }));
            }
        }
        for (trigger, names) in &k.dependent_required {
            self.step(1)?;
            if !o.contains_key(trigger) {
                continue;
            }
            for name in names {
                self.step(1)?;
                if !o.contains_key(name) {
                    return Err(self.fail_member(report, name, "dependentRequired", || {
                        format!(
                            "property \"{}\" is required when \"{}\" is present",
                            safe_text(name, 60),
                            safe_text(trigger, 60)
                        )
                    }));
                }
            }
        }
        if !k.properties.is_empty()
            || !k.pattern_properties.is_empty()
            || k.additional_properties.is_some()
        {
            for (key, value) in o {
                self.member(k, key, value, report)?;
            }
        }
        if let Some(node) = k.property_names {
            self.property_names(node, o, report)?;
        }
        Ok(())
    }

    /// `properties`, `patternProperties` and `additionalProperties` for one member.
    fn member(&mut self, k: &'s Keywords, key: &'i str, value: &'i Value, report: bool) -> Res {
        self.step(1)?;
        let mut matched = false;
        if let Ok(idx) = k.properties.binary_search_by(|(n, _)| n.as_str().cmp(key)) {
            if let Some(&(_, node)) = k.properties.get(idx) {
                matched = true;
                self.eval_child(node, Seg::Key(key), value, report)?;
            }
        }
        for (pattern, node) in &k.pattern_properties {
            self.step(pattern.cost(key))?;
            if pattern.is_match(key) {
                matched = true;
                self.eval_child(*node, Seg::Key(key), value, report)?;
            }
        }
        if matched {
            return Ok(());
        }
        let Some(node) = k.additional_properties else {
            return Ok(());
        };
        if matches!(self.nodes.get(node), Some(Node::Bool(false))) {
            return Err(self.fail_member(report, key, "additionalProperties", || {
                format!(
                    "property \"{}\" is not allowed (additionalProperties is false)",
                    safe_text(key, 60)
                )
            }));
        }
        self.eval_child(node, Seg::Key(key), value, report)
    }

    /// `propertyNames`: each name is a string instance of its own, tested in boolean mode
    /// by a validator that shares this one's budget.
    fn property_names(&mut self, node: usize, o: &'i Map<String, Value>, report: bool) -> Res {
        for key in o.keys() {
            let name = Value::String(key.clone());
            let mut sub = Validator {
                nodes: self.nodes,
                steps: self.steps,
                max_steps: self.max_steps,
                next_poll: self.next_poll,
                interrupt: &mut *self.interrupt,
                path: Vec::new(),
                depth: self.depth,
            };
            let r = sub.test(node, &name);
            self.steps = sub.steps;
            self.next_poll = sub.next_poll;
            if !r? {
                return Err(self.fail_member(report, key, "propertyNames", || {
                    format!(
                        "property name \"{}\" does not match propertyNames",
                        safe_text(key, 60)
                    )
                }));
            }
        }
        Ok(())
    }

    /// `$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`.
    fn in_place(&mut self, k: &'s Keywords, inst: &'i Value, report: bool) -> Res {
        if let Some(node) = k.ref_ {
            self.eval(node, inst, report)?;
        }
        for &node in &k.all_of {
            self.eval(node, inst, report)?;
        }
        if !k.any_of.is_empty() {
            let mut any = false;
            for &node in &k.any_of {
                if self.test(node, inst)? {
                    any = true;
                    break;
                }
            }
            if !any {
                return Err(self.fail(report, "anyOf", || {
                    format!(
                        "{} matches none of the {} anyOf alternatives",
                        show(inst),
                        k.any_of.len()
                    )
                }));
            }
        }
        if !k.one_of.is_empty() {
            let mut hits = 0;
            for &node in &k.one_of {
                if self.test(node, inst)? {
                    hits += 1;
                    if hits > 1 {
                        break;
                    }
                }
            }
            if hits != 1 {
                let n = k.one_of.len();
                return Err(self.fail(report, "oneOf", || match hits {
                    0 => format!("{} matches none of the {n} oneOf alternatives", show(inst)),
                    _ => format!(
                        "{} matches more than one of the {n} oneOf alternatives",
                        show(inst)
                    ),
                }));
            }
        }
        if let Some(node) = k.not {
            if self.test(node, inst)? {
                return Err(self.fail(report, "not", || {
                    format!("{} must not match the schema under not", show(inst))
                }));
            }
        }
        if let Some(cond) = k.if_.filter(|_| k.then_.is_some() || k.else_.is_some()) {
            let next = if self.test(cond, inst)? {
                k.then_
            } else {
                k.else_
            };
            if let Some(node) = next {
                self.eval(node, inst, report)?;
            }
        }
        if let Value::Object(o) = inst {
            for (trigger, node) in &k.dependent_schemas {
                self.step(1)?;
                if o.contains_key(trigger) {
                    self.eval(*node, inst, report)?;
                }
            }
        }
        Ok(())
    }

    /// JSON Schema equality (numbers by exact value, `1 == 1.0`), charged per node.
    fn equal(&mut self, a: &Value, b: &Value, depth: usize) -> Result<bool, Stop> {
        self.step(1)?;
        if depth >= MAX_EVAL_DEPTH {
            return Err(Stop::Budget);
        }
        Ok(match (a, b) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::String(x), Value::String(y)) => {
                self.step(x.len().min(y.len()) as u64 / 64)?;
                x == y
            }
            (Value::Number(x), Value::Number(y)) => x == y || decimal(x)? == decimal(y)?,
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    return Ok(false);
                }
                for (p, q) in x.iter().zip(y) {
                    if !stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.equal(p, q, depth + 1))?
                    {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Object(x), Value::Object(y)) => {
                if x.len() != y.len() {
                    return Ok(false);
                }
                for (key, p) in x {
                    let Some(q) = y.get(key) else {
                        return Ok(false);
                    };
                    if !stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.equal(p, q, depth + 1))?
                    {
                        return Ok(false);
                    }
                }
                true
            }
            _ => false,
        })
    }

    /// A hash consistent with [`Self::equal`]: numbers hash their exact value, objects
    /// combine members without regard to order.
    fn hash_value(&mut self, v: &Value, state: &RandomState, depth: usize) -> Result<u64, Stop> {
        self.step(1)?;
        if depth >= MAX_EVAL_DEPTH {
            return Err(Stop::Budget);
        }
        let mut h = state.build_hasher();
        match v {
            Value::Null => 0u8.hash(&mut h),
            Value::Bool(b) => (1u8, b).hash(&mut h),
            Value::Number(n) => (2u8, decimal(n)?).hash(&mut h),
            Value::String(s) => {
                self.step(s.len() as u64 / 64)?;
                (3u8, s).hash(&mut h);
            }
            Value::Array(items) => {
                (4u8, items.len()).hash(&mut h);
                for item in items {
                    let x = stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
                        self.hash_value(item, state, depth + 1)
                    })?;
                    x.hash(&mut h);
                }
            }
            Value::Object(members) => {
                let mut acc = 0u64;
                for (key, item) in members {
                    let x = stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || {
                        self.hash_value(item, state, depth + 1)
                    })?;
                    acc = acc.wrapping_add(state.hash_one((key, x)));
                }
                (5u8, members.len(), acc).hash(&mut h);
            }
        }
        Ok(h.finish())
    }
}
