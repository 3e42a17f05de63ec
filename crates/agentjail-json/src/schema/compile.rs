//! Schema document → flat node table, with every bound checked before work is done.
//!
//! Order: document depth (iterative), serialized size (stops counting at the limit), then
//! one walk over the schema positions (recursion bounded by the checked depth) that counts
//! nodes, `$ref`s and patterns as it goes, then `$ref` resolution to node indices (never
//! copied, so a chain of refs costs its length), then the in-place closure. The document
//! passes before the walk and the closure after it are in `bounds.rs`.

use super::number::Decimal;
use super::pattern::Pattern;
use super::{SchemaError, SchemaLimits};
use crate::strict::push_pointer_token;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The only `$schema` accepted (with or without an empty fragment).
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Keywords refused because they need machinery this validator leaves out on purpose.
pub const UNSUPPORTED: [&str; 7] = [
    "$dynamicRef",
    "$dynamicAnchor",
    "$anchor",
    "$recursiveRef",
    "$vocabulary",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Every keyword accepted, for the message that lists them.
pub const SUPPORTED: &str = "$schema (2020-12), $id (root, ignored), $ref (local #/... only), \
$defs, definitions, $comment, allOf, anyOf, oneOf, not, if, then, else, dependentSchemas, \
prefixItems, items, contains, minContains, maxContains, properties, patternProperties, \
additionalProperties, propertyNames, type, enum, const, multipleOf, maximum, \
exclusiveMaximum, minimum, exclusiveMinimum, maxLength, minLength, pattern, maxItems, \
minItems, uniqueItems, maxProperties, minProperties, required, dependentRequired; \
annotations: title, description, default, examples, deprecated, readOnly, writeOnly, \
format, contentEncoding, contentMediaType, contentSchema";

pub const T_NULL: u8 = 1;
pub const T_BOOL: u8 = 2;
pub const T_OBJECT: u8 = 4;
pub const T_ARRAY: u8 = 8;
pub const T_NUMBER: u8 = 16;
pub const T_INTEGER: u8 = 32;
pub const T_STRING: u8 = 64;

/// One subschema.
#[derive(Debug, Clone)]
pub enum Node {
    Bool(bool),
    Schema(Box<Keywords>),
}

/// The keywords of one schema object, children as node indices.
#[derive(Debug, Clone, Default)]
pub struct Keywords {
    pub ref_: Option<usize>,
    pub all_of: Vec<usize>,
    pub any_of: Vec<usize>,
    pub one_of: Vec<usize>,
    pub not: Option<usize>,
    pub if_: Option<usize>,
    pub then_: Option<usize>,
    pub else_: Option<usize>,
    pub dependent_schemas: Vec<(String, usize)>,
    pub prefix_items: Vec<usize>,
    pub items: Option<usize>,
    pub contains: Option<usize>,
    pub min_contains: Option<u64>,
    pub max_contains: Option<u64>,
    /// Sorted by name, for binary search.
    pub properties: Vec<(String, usize)>,
    pub pattern_properties: Vec<(Pattern, usize)>,
    pub additional_properties: Option<usize>,
    pub property_names: Option<usize>,
    pub types: Option<u8>,
    pub enum_: Option<Vec<Value>>,
    pub const_: Option<Value>,
    pub multiple_of: Option<Decimal>,
    pub maximum: Option<Decimal>,
    pub exclusive_maximum: Option<Decimal>,
    pub minimum: Option<Decimal>,
    pub exclusive_minimum: Option<Decimal>,
    pub max_length: Option<u64>,
    pub min_length: Option<u64>,
    pub pattern: Option<Pattern>,
    pub max_items: Option<u64>,
    pub min_items: Option<u64>,
    pub unique_items: bool,
    pub max_properties: Option<u64>,
    pub min_properties: Option<u64>,
    pub required: Vec<String>,
    pub dependent_required: Vec<(String, Vec<String>)>,
}

impl Keywords {
    /// Children applied to the same instance value (the in-place closure's edges).
    pub fn in_place(&self) -> impl Iterator<Item = usize> + '_ {
        self.ref_
            .iter()
            .chain(&self.all_of)
            .chain(&self.any_of)
            .chain(&self.one_of)
            .chain(&self.not)
            .chain(&self.if_)
            .chain(&self.then_)
            .chain(&self.else_)
            .chain(self.dependent_schemas.iter().map(|(_, n)| n))
            .copied()
    }
}

/// Keyword names echoed in a stop reason: `[A-Za-z0-9_$-]`, at most 32 characters.
pub fn sanitize_keyword(kw: &str) -> String {
    let s: String = kw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-'))
        .take(32)
        .collect();
    if s.is_empty() {
        "_".into()
    } else {
        s
    }
}

/// Where in the schema, for messages.
fn at(pointer: &str) -> String {
    if pointer.is_empty() {
        "at the schema's root".into()
    } else {
        format!("at \"{}\"", crate::strict::safe_text(pointer, 120))
    }
}

pub(super) struct Compiler<'v> {
    root: &'v Value,
    limits: &'v SchemaLimits,
    pub nodes: Vec<Node>,
    /// Address of each compiled schema value → its node.
    locations: HashMap<usize, usize>,
    /// (node, address of the `$ref` target), resolved once every node exists.
    pending_refs: Vec<(usize, usize, String)>,
    patterns: usize,
}

fn addr(v: &Value) -> usize {
    std::ptr::from_ref(v) as usize
}

impl<'v> Compiler<'v> {
    pub fn new(root: &'v Value, limits: &'v SchemaLimits) -> Self {
        Compiler {
            root,
            limits,
            nodes: Vec::new(),
            locations: HashMap::new(),
            pending_refs: Vec::new(),
            patterns: 0,
        }
    }

    /// Compile the whole document; returns the root node.
    pub fn run(&mut self) -> Result<usize, SchemaError> {
        let root = self.subschema(self.root, "", None)?;
        self.resolve_refs()?;
        Ok(root)
    }

    /// Compile the schema at `v` (found at `pointer`, under keyword `parent`).
    fn subschema(
        &mut self,
        v: &'v Value,
        pointer: &str,
        parent: Option<&str>,
    ) -> Result<usize, SchemaError> {
        if self.nodes.len() >= self.limits.max_nodes {
            return Err(SchemaError::new(
                "too_many_nodes",
                format!(
                    "output_schema has more than {} subschemas; send a smaller schema",
                    self.limits.max_nodes
                ),
            ));
        }
        let id = self.nodes.len();
        self.nodes.push(Node::Bool(true));
        self.locations.insert(addr(v), id);
        let node = match v {
            Value::Bool(b) => Node::Bool(*b),
            Value::Object(obj) => Node::Schema(Box::new(self.keywords(obj, pointer, id)?)),
            _ => {
                return Err(match parent {
                    None => SchemaError::new(
                        "not_a_schema",
                        "output_schema must be a JSON Schema object or a boolean",
                    ),
                    Some(kw) => SchemaError::invalid(
                        kw,
                        pointer,
                        "a subschema must be an object or a boolean",
                    ),
                })
            }
        };
        if let Some(slot) = self.nodes.get_mut(id) {
            *slot = node;
        }
        Ok(id)
    }

    fn keywords(
        &mut self,
        obj: &'v Map<String, Value>,
        pointer: &str,
        id: usize,
    ) -> Result<Keywords, SchemaError> {
        let mut k = Keywords::default();
        if let Some(r) = obj.get("$ref") {
            let mut here = pointer.to_string();
            push_pointer_token(&mut here, "$ref");
            self.reference(id, r, &here)?;
        }
        for (key, value) in obj {
            let mut here = pointer.to_string();
            push_pointer_token(&mut here, key);
            if self.applicator(&mut k, key, value, &here)?
                || self.object_keyword(&mut k, key, value, &here)?
                || self.assertion(&mut k, key, value, &here)?
                || self.core(key, value, pointer, &here)?
            {
                continue;
            }
            let kw = sanitize_keyword(key);
            if UNSUPPORTED.contains(&key.as_str()) {
                return Err(SchemaError::new(
                    format!("unsupported_keyword:{kw}"),
                    format!(
                        "output_schema uses {kw} {}, which agentjail does not support; supported keywords: {SUPPORTED}",
                        at(pointer)
                    ),
                ));
            }
            return Err(SchemaError::new(
                format!("unknown_keyword:{kw}"),
                format!(
                    "output_schema has the unknown keyword \"{}\" {} (a misspelt keyword would silently drop a bound); supported keywords: {SUPPORTED}",
                    crate::strict::safe_text(key, 40),
                    at(pointer)
                ),
            ));
        }
        Ok(k)
    }

    fn one(&mut self, v: &'v Value, here: &str, kw: &str) -> Result<Option<usize>, SchemaError> {
        self.subschema(v, here, Some(kw)).map(Some)
    }

    fn list(&mut self, v: &'v Value, here: &str, kw: &str) -> Result<Vec<usize>, SchemaError> {
        let Value::Array(items) = v else {
            return Err(SchemaError::invalid(
                kw,
                here,
                "must be a non-empty array of schemas",
            ));
        };
        if items.is_empty() {
            return Err(SchemaError::invalid(
                kw,
                here,
                "must be a non-empty array of schemas",
            ));
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let mut p = here.to_string();
            push_pointer_token(&mut p, &i.to_string());
            out.push(self.subschema(item, &p, Some(kw))?);
        }
        Ok(out)
    }

    fn map(
        &mut self,
        v: &'v Value,
        here: &str,
        kw: &str,
    ) -> Result<Vec<(String, usize)>, SchemaError> {
        let Value::Object(m) = v else {
            return Err(SchemaError::invalid(
                kw,
                here,
                "must be an object whose values are schemas",
            ));
        };
        let mut out = Vec::with_capacity(m.len());
        for (name, item) in m {
            let mut p = here.to_string();
            push_pointer_token(&mut p, name);
            out.push((name.clone(), self.subschema(item, &p, Some(kw))?));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Keywords that apply subschemas in place or to array items.
    fn applicator(
        &mut self,
        k: &mut Keywords,
        key: &str,
        v: &'v Value,
        here: &str,
    ) -> Result<bool, SchemaError> {
        match key {
            "allOf" => k.all_of = self.list(v, here, key)?,
            "anyOf" => k.any_of = self.list(v, here, key)?,
            "oneOf" => k.one_of = self.list(v, here, key)?,
            "not" => k.not = self.one(v, here, key)?,
            "if" => k.if_ = self.one(v, here, key)?,
            "then" => k.then_ = self.one(v, here, key)?,
            "else" => k.else_ = self.one(v, here, key)?,
            "dependentSchemas" => k.dependent_schemas = self.map(v, here, key)?,
            "prefixItems" => k.prefix_items = self.list(v, here, key)?,
            "items" => {
                if v.is_array() {
                    return Err(SchemaError::invalid(
                        key,
                        here,
                        "must be one schema in draft 2020-12; use prefixItems for a list of schemas",
                    ));
                }
                k.items = self.one(v, here, key)?;
            }
            "contains" => k.contains = self.one(v, here, key)?,
            "minContains" => k.min_contains = Some(count(v, key, here)?),
            "maxContains" => k.max_contains = Some(count(v, key, here)?),
            "$defs" | "definitions" => {
                self.map(v, here, key)?;
            }
            "$ref" => {} // read first, by `keywords`
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Keywords about objects.
    fn object_keyword(
        &mut self,
        k: &mut Keywords,
        key: &str,
        v: &'v Value,
        here: &str,
    ) -> Result<bool, SchemaError> {
        match key {
            "properties" => k.properties = self.map(v, here, key)?,
            "patternProperties" => {
                let Value::Object(m) = v else {
                    return Err(SchemaError::invalid(
                        key,
                        here,
                        "must be an object of pattern: schema",
                    ));
                };
                for (source, item) in m {
                    let mut p = here.to_string();
                    push_pointer_token(&mut p, source);
                    let pattern = self.pattern(source, &p)?;
                    let node = self.subschema(item, &p, Some(key))?;
                    k.pattern_properties.push((pattern, node));
                }
            }
            "additionalProperties" => k.additional_properties = self.one(v, here, key)?,
            "propertyNames" => k.property_names = self.one(v, here, key)?,
            "maxProperties" => k.max_properties = Some(count(v, key, here)?),
            "minProperties" => k.min_properties = Some(count(v, key, here)?),
            "required" => k.required = strings(v, key, here)?,
            "dependentRequired" => {
                let Value::Object(m) = v else {
                    return Err(SchemaError::invalid(
                        key,
                        here,
                        "must be an object of arrays of strings",
                    ));
                };
                for (name, list) in m {
                    k.dependent_required
                        .push((name.clone(), strings(list, key, here)?));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Assertions on one value.
    fn assertion(
        &mut self,
        k: &mut Keywords,
        key: &str,
        v: &'v Value,
        here: &str,
    ) -> Result<bool, SchemaError> {
        match key {
            "type" => k.types = Some(types(v, here)?),
            "enum" => match v {
                Value::Array(items) => k.enum_ = Some(items.clone()),
                _ => {
                    return Err(SchemaError::invalid(
                        key,
                        here,
                        "must be an array of values",
                    ))
                }
            },
            "const" => k.const_ = Some(v.clone()),
            "multipleOf" => {
                let d = number(v, key, here)?;
                if d.is_negative() || d.is_zero() {
                    return Err(SchemaError::invalid(
                        key,
                        here,
                        "must be a number greater than 0",
                    ));
                }
                k.multiple_of = Some(d);
            }
            "maximum" => k.maximum = Some(number(v, key, here)?),
            "exclusiveMaximum" => k.exclusive_maximum = Some(number(v, key, here)?),
            "minimum" => k.minimum = Some(number(v, key, here)?),
            "exclusiveMinimum" => k.exclusive_minimum = Some(number(v, key, here)?),
            "maxLength" => k.max_length = Some(count(v, key, here)?),
            "minLength" => k.min_length = Some(count(v, key, here)?),
            "pattern" => match v {
                Value::String(s) => k.pattern = Some(self.pattern(s, here)?),
                _ => return Err(SchemaError::invalid(key, here, "must be a string")),
            },
            "maxItems" => k.max_items = Some(count(v, key, here)?),
            "minItems" => k.min_items = Some(count(v, key, here)?),
            "uniqueItems" => match v {
                Value::Bool(b) => k.unique_items = *b,
                _ => return Err(SchemaError::invalid(key, here, "must be a boolean")),
            },
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `$schema`, `$id`, `$comment` and the annotations, checked for shape and ignored.
    fn core(
        &mut self,
        key: &str,
        v: &Value,
        pointer: &str,
        here: &str,
    ) -> Result<bool, SchemaError> {
        let shape_ok = match key {
            "$schema" => {
                let uri = v.as_str().unwrap_or_default();
                if uri != DRAFT_2020_12 && uri.strip_suffix('#') != Some(DRAFT_2020_12) {
                    return Err(SchemaError::new(
                        "unsupported_draft",
                        format!("output_schema's $schema must be \"{DRAFT_2020_12}\" (or left out); agentjail validates draft 2020-12 only"),
                    ));
                }
                true
            }
            "$id" => {
                if !pointer.is_empty() {
                    return Err(SchemaError::new(
                        "unsupported_keyword:$id",
                        format!("$id is accepted only at the schema's root (as an annotation); remove it {}", at(pointer)),
                    ));
                }
                v.is_string()
            }
            "$comment" | "title" | "description" | "format" | "contentEncoding"
            | "contentMediaType" => v.is_string(),
            "deprecated" | "readOnly" | "writeOnly" => v.is_boolean(),
            "examples" => v.is_array(),
            "default" | "contentSchema" => true,
            _ => return Ok(false),
        };
        if !shape_ok {
            return Err(SchemaError::invalid(
                key,
                here,
                "has the wrong type for this keyword",
            ));
        }
        Ok(true)
    }

    fn pattern(&mut self, source: &str, here: &str) -> Result<Pattern, SchemaError> {
        self.patterns += 1;
        if self.patterns > self.limits.max_patterns {
            return Err(SchemaError::new(
                "too_many_patterns",
                format!(
                    "output_schema has more than {} patterns (pattern and patternProperties); send fewer",
                    self.limits.max_patterns
                ),
            ));
        }
        if source.chars().count() > self.limits.max_pattern_chars {
            return Err(SchemaError::new(
                "pattern",
                format!(
                    "the pattern {} is longer than {} characters; send a shorter pattern",
                    at(here),
                    self.limits.max_pattern_chars
                ),
            ));
        }
        Pattern::compile(source).map_err(|why| {
            SchemaError::new(
                "pattern",
                format!(
                    "the pattern {} does not compile on agentjail's linear-time engine ({why}); \
                     send a pattern without look-around or backreferences",
                    at(here)
                ),
            )
        })
    }

    /// Check a `$ref` of node `owner` now; it is linked once every node exists.
    fn reference(&mut self, owner: usize, v: &'v Value, here: &str) -> Result<(), SchemaError> {
        let Value::String(r) = v else {
            return Err(SchemaError::invalid("$ref", here, "must be a string"));
        };
        if self.pending_refs.len() >= self.limits.max_refs {
            return Err(SchemaError::new(
                "too_many_refs",
                format!(
                    "output_schema has more than {} $ref; send fewer",
                    self.limits.max_refs
                ),
            ));
        }
        let target = resolve_pointer(self.root, r).ok_or_else(|| bad_ref(r, here))?;
        self.pending_refs.push((owner, addr(target), r.clone()));
        Ok(())
    }

    fn resolve_refs(&mut self) -> Result<(), SchemaError> {
        for (owner, target, text) in std::mem::take(&mut self.pending_refs) {
            let Some(&node) = self.locations.get(&target) else {
                return Err(bad_ref(&text, ""));
            };
            if let Some(Node::Schema(k)) = self.nodes.get_mut(owner) {
                k.ref_ = Some(node);
            }
        }
        Ok(())
    }
}

fn bad_ref(r: &str, here: &str) -> SchemaError {
    SchemaError::new(
        "bad_ref",
        format!(
            "$ref \"{}\"{} is not a local reference to a subschema; agentjail resolves only \
             \"#\" and \"#/...\" JSON pointers into this schema (never remote documents)",
            crate::strict::safe_text(r, 80),
            if here.is_empty() {
                String::new()
            } else {
                format!(" {}", at(here))
            }
        ),
    )
}

/// `#` or `#/a/b` (percent-encoded per URI fragment rules, then RFC 6901) → the value.
fn resolve_pointer<'v>(root: &'v Value, r: &str) -> Option<&'v Value> {
    let fragment = r.strip_prefix('#')?;
    let decoded = percent_decode(fragment)?;
    if decoded.is_empty() {
        return Some(root);
    }
    let rest = decoded.strip_prefix('/')?;
    let mut cur = root;
    for raw in rest.split('/') {
        let token = unescape_token(raw)?;
        cur = match cur {
            Value::Object(m) => m.get(&token)?,
            Value::Array(a) => {
                if token.len() > 1 && token.starts_with('0') {
                    return None;
                }
                a.get(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

fn unescape_token(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next()? {
                '0' => out.push('~'),
                '1' => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn number(v: &Value, kw: &str, here: &str) -> Result<Decimal, SchemaError> {
    match v {
        Value::Number(n) => Decimal::from_number(n)
            .ok_or_else(|| SchemaError::invalid(kw, here, "is too long a number")),
        _ => Err(SchemaError::invalid(kw, here, "must be a number")),
    }
}

fn count(v: &Value, kw: &str, here: &str) -> Result<u64, SchemaError> {
    let d = match v {
        Value::Number(n) => Decimal::from_number(n),
        _ => None,
    };
    d.and_then(|d| d.to_u64_saturating())
        .ok_or_else(|| SchemaError::invalid(kw, here, "must be a non-negative integer"))
}

fn strings(v: &Value, kw: &str, here: &str) -> Result<Vec<String>, SchemaError> {
    let bad = || SchemaError::invalid(kw, here, "must be an array of unique strings");
    let Value::Array(items) = v else {
        return Err(bad());
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let s = item.as_str().ok_or_else(bad)?;
        out.push(s.to_string());
    }
    let mut sorted: Vec<&String> = out.iter().collect();
    sorted.sort();
    if sorted.windows(2).any(|w| w.first() == w.get(1)) {
        return Err(bad());
    }
    Ok(out)
}

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "null" => T_NULL,
        "boolean" => T_BOOL,
        "object" => T_OBJECT,
        "array" => T_ARRAY,
        "number" => T_NUMBER,
        "integer" => T_INTEGER,
        "string" => T_STRING,
        _ => return None,
    })
}

fn types(v: &Value, here: &str) -> Result<u8, SchemaError> {
    let bad = || {
        SchemaError::invalid(
            "type",
            here,
            "must be one of null, boolean, object, array, number, integer, string, or a non-empty array of them without repeats",
        )
    };
    match v {
        Value::String(s) => type_bit(s).ok_or_else(bad),
        Value::Array(items) if !items.is_empty() => {
            let mut mask = 0u8;
            for item in items {
                let bit = item.as_str().and_then(type_bit).ok_or_else(bad)?;
                if mask & bit != 0 {
                    return Err(bad());
                }
                mask |= bit;
            }
            Ok(mask)
        }
        _ => Err(bad()),
    }
}
