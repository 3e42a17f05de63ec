//! The schema's cost bounds that are not keywords: the shape pass before the compiler's
//! walk (nesting depth and a lower bound of the size, iterative, stopping at the first
//! limit), the exact serialized size, and after it the in-place closure (how many
//! subschemas one instance value can cost through `$ref` and the in-place applicators, and
//! whether they cycle). Separate from the compiler (`compile.rs`) because these are whole-
//! document checks with no keyword knowledge: the walk may assume them, never redo them.

use super::compile::Node;
use serde_json::Value;
use std::io;

/// What the first, shape-only pass found.
pub enum Shape {
    Ok,
    TooDeep,
    TooLarge,
}

/// Nesting depth and a lower bound of the serialized size, without recursion, stopping as
/// soon as either is over its limit (so a huge document costs only what fits the limits).
pub fn shape(v: &Value, max_depth: usize, max_bytes: usize) -> Shape {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 1)];
    let mut bytes = 0usize;
    while let Some((v, d)) = stack.pop() {
        bytes = bytes.saturating_add(match v {
            Value::Null | Value::Bool(_) => 4,
            Value::Number(_) => 1,
            Value::String(s) => s.len() + 2,
            Value::Array(a) => a.len() + 1,
            Value::Object(o) => o.keys().map(|k| k.len() + 4).sum::<usize>() + 1,
        });
        if bytes > max_bytes {
            return Shape::TooLarge;
        }
        match v {
            Value::Array(_) | Value::Object(_) if d > max_depth => return Shape::TooDeep,
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|c| (c, d + 1))),
            _ => {}
        }
    }
    Shape::Ok
}

/// A writer that only counts, and fails once past `limit` so serializing stops early.
struct Counter {
    n: usize,
    limit: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.n = self.n.saturating_add(buf.len());
        if self.n > self.limit {
            return Err(io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serialized (compact) size is above `limit`. Call only on a depth-checked value.
pub fn serialized_exceeds(v: &Value, limit: usize) -> bool {
    let mut c = Counter { n: 0, limit };
    serde_json::to_writer(&mut c, v).is_err()
}

/// Subschema evaluations one instance value can cost through in-place applicators
/// (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`),
/// memoised and saturating; the largest over all nodes. A cycle of in-place edges would
/// recurse forever on one value: `Err(node)` names a node on it.
pub fn in_place_closure(nodes: &[Node]) -> Result<u64, usize> {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; nodes.len()];
    let mut cost = vec![0u64; nodes.len()];
    let children = |n: usize| -> Vec<usize> {
        match nodes.get(n) {
            Some(Node::Schema(k)) => k.in_place().collect(),
            _ => Vec::new(),
        }
    };
    let mut max = 0u64;
    for start in 0..nodes.len() {
        if state.get(start) != Some(&NEW) {
            continue;
        }
        // Iterative post-order: (node, children, next child index).
        let mut stack: Vec<(usize, Vec<usize>, usize)> = vec![(start, children(start), 0)];
        if let Some(s) = state.get_mut(start) {
            *s = OPEN;
        }
        while let Some((node, kids, next)) = stack.last_mut() {
            if let Some(&child) = kids.get(*next) {
                *next += 1;
                match state.get(child).copied() {
                    Some(OPEN) => return Err(child),
                    Some(NEW) => {
                        if let Some(s) = state.get_mut(child) {
                            *s = OPEN;
                        }
                        let grand = children(child);
                        stack.push((child, grand, 0));
                    }
                    _ => {}
                }
                continue;
            }
            let node = *node;
            let total = kids.iter().fold(1u64, |acc, &c| {
                acc.saturating_add(cost.get(c).copied().unwrap_or(0))
            });
            if let Some(c) = cost.get_mut(node) {
                *c = total;
            }
            if let Some(s) = state.get_mut(node) {
                *s = DONE;
            }
            max = max.max(total);
            stack.pop();
        }
    }
    Ok(max)
}
