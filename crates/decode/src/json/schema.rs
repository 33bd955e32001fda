//! JSON Schema documents compiled into type trees (see the parent module for
//! the mapping).

use std::collections::HashMap;

use super::infer::Shape;
use super::types::{Node, StructNode};
use super::value::{Value, get};
use super::{MAX_REF_REPEAT, MAX_SCHEMA_DEPTH, MAX_SCHEMA_FIELDS};
use crate::DecodeError;

pub(super) struct Compiler<'v> {
    pub(super) root: &'v Value,
    /// `$ref`s being expanded on the current path.
    pub(super) ref_stack: Vec<&'v str>,
    /// Typed fields compiled so far (against [`MAX_SCHEMA_FIELDS`]).
    pub(super) fields: usize,
}

/// The type a JSON Schema `type` name stands for.
fn type_name_node(name: &str) -> Option<Node> {
    Some(match name {
        "integer" => Node::Int,
        "number" => Node::Float,
        "string" => Node::Str,
        "boolean" => Node::Bool,
        "null" => Node::Null,
        _ => return None,
    })
}

/// Resolves a local JSON pointer reference (`#`, `#/definitions/X`, ...).
fn resolve_pointer<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let pointer = pointer.strip_prefix('/')?;
    let mut at = root;
    for raw in pointer.split('/') {
        let token = percent_decode(raw)?.replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(pairs) => get(pairs, &token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// `%XX` escapes of a URI fragment decoded (`None` when malformed).
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl<'v> Compiler<'v> {
    pub(super) fn compile(&mut self, schema: &'v Value, depth: usize) -> Result<Node, DecodeError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Ok(Node::Text);
        }
        let Value::Object(pairs) = schema else {
            // `true`, `false` and anything malformed: no type to go by.
            return Ok(Node::Text);
        };
        if let Some(reference) = get(pairs, "$ref") {
            return self.compile_ref(reference, depth);
        }
        match get(pairs, "type") {
            Some(Value::Str(t)) => self.compile_type(t, pairs, depth),
            Some(Value::Array(types)) => {
                let mut names = Vec::new();
                for t in types {
                    match t {
                        Value::Str(t) if t == "null" => {}
                        Value::Str(t) if !names.contains(&t.as_str()) => names.push(t.as_str()),
                        Value::Str(_) => {}
                        _ => return Ok(Node::Text),
                    }
                }
                match names.as_slice() {
                    [] if types.is_empty() => Ok(Node::Text),
                    [] => Ok(Node::Null),
                    [one] => self.compile_type(one, pairs, depth),
                    ["integer", "number"] | ["number", "integer"] => Ok(Node::Float),
                    _ => Ok(Node::Text),
                }
            }
            Some(_) => Ok(Node::Text),
            None => match (
                get(pairs, "anyOf"),
                get(pairs, "oneOf"),
                get(pairs, "allOf"),
            ) {
                (Some(alternatives), None, None) | (None, Some(alternatives), None) => {
                    self.compile_alternatives(alternatives, depth)
                }
                (None, None, Some(Value::Array(all))) if all.len() == 1 => {
                    self.compile(&all[0], depth)
                }
                (None, None, None) => self.compile_untyped(pairs, depth),
                _ => Ok(Node::Text),
            },
        }
    }

    /// A schema without `type`, `$ref` or combinators: `properties` make it
    /// an object, `items` an array, `const`/`enum` the type of their values.
    fn compile_untyped(
        &mut self,
        pairs: &'v [(String, Value)],
        depth: usize,
    ) -> Result<Node, DecodeError> {
        if get(pairs, "properties").is_some() {
            return self.compile_type("object", pairs, depth);
        }
        if get(pairs, "items").is_some() {
            return self.compile_type("array", pairs, depth);
        }
        Ok(match get(pairs, "const") {
            Some(v) => type_of_values(std::slice::from_ref(v)),
            None => match get(pairs, "enum") {
                Some(Value::Array(values)) => type_of_values(values),
                _ => Node::Text,
            },
        })
    }

    fn compile_type(
        &mut self,
        name: &str,
        pairs: &'v [(String, Value)],
        depth: usize,
    ) -> Result<Node, DecodeError> {
        match name {
            "object" => {
                let Some(Value::Object(properties)) = get(pairs, "properties") else {
                    return Ok(Node::Text);
                };
                if properties.is_empty() {
                    return Ok(Node::Text);
                }
                let mut names: Vec<Box<str>> = Vec::new();
                let mut children: Vec<Node> = Vec::new();
                let mut seen: HashMap<&str, usize> = HashMap::new();
                for (name, schema) in properties {
                    self.fields += 1;
                    if self.fields > MAX_SCHEMA_FIELDS {
                        return Err(DecodeError::new(format!(
                            "the schema expands to more than {MAX_SCHEMA_FIELDS} fields"
                        )));
                    }
                    let node = self
                        .compile(schema, depth + 1)
                        .map_err(|e| e.context(format_args!("property {name:?}")))?;
                    match seen.get(name.as_str()) {
                        // A repeated property: the last definition wins, in the first place.
                        Some(&i) => children[i] = node,
                        None => {
                            seen.insert(name, names.len());
                            names.push(name.as_str().into());
                            children.push(node);
                        }
                    }
                }
                Ok(Node::Struct(StructNode::new(names, children)))
            }
            "array" => match get(pairs, "items") {
                Some(items @ (Value::Object(_) | Value::Bool(true))) => {
                    let item = self.compile(items, depth + 1)?;
                    Ok(Node::List(Box::new(item)))
                }
                // Draft-4 tuples (`items` an array), `prefixItems`: JSON text.
                Some(_) => Ok(Node::Text),
                None if get(pairs, "prefixItems").is_some() => Ok(Node::Text),
                None => Ok(Node::List(Box::new(Node::Text))),
            },
            other => Ok(type_name_node(other).unwrap_or(Node::Text)),
        }
    }

    fn compile_ref(&mut self, reference: &'v Value, depth: usize) -> Result<Node, DecodeError> {
        let Value::Str(reference) = reference else {
            return Ok(Node::Text);
        };
        let repeats = self
            .ref_stack
            .iter()
            .filter(|r| **r == reference.as_str())
            .count();
        if repeats >= MAX_REF_REPEAT || self.ref_stack.len() >= MAX_SCHEMA_DEPTH {
            return Ok(Node::Text);
        }
        // Remote references and `$id` anchors are not resolved: JSON text.
        let Some(target) = resolve_pointer(self.root, reference) else {
            return Ok(Node::Text);
        };
        self.ref_stack.push(reference);
        let node = self.compile(target, depth);
        self.ref_stack.pop();
        node
    }

    /// `anyOf`/`oneOf`: one schema, or one schema and `{"type": "null"}`,
    /// gives that schema's type; alternatives that are all the same scalar
    /// type (`{"const": 1}`, `{"const": 2}`: integers) give that type, integers
    /// and numbers together a number; anything else is JSON text.
    fn compile_alternatives(
        &mut self,
        alternatives: &'v Value,
        depth: usize,
    ) -> Result<Node, DecodeError> {
        let Value::Array(items) = alternatives else {
            return Ok(Node::Text);
        };
        let is_null = |v: &Value| match v {
            Value::Object(pairs) => {
                pairs.len() == 1 && matches!(get(pairs, "type"), Some(Value::Str(t)) if t == "null")
            }
            _ => false,
        };
        let mut rest = items.iter().filter(|v| !is_null(v));
        match (rest.next(), rest.next()) {
            (Some(one), None) => self.compile(one, depth),
            (None, None) if !items.is_empty() => Ok(Node::Null),
            (Some(_), Some(_)) => {
                let mut common: Option<Node> = None;
                for item in items.iter().filter(|v| !is_null(v)) {
                    let node = self.compile(item, depth + 1)?;
                    common = Some(match (common, node) {
                        (None, n @ (Node::Bool | Node::Int | Node::Float | Node::Str)) => n,
                        (Some(Node::Bool), Node::Bool) => Node::Bool,
                        (Some(Node::Int), Node::Int) => Node::Int,
                        (Some(Node::Str), Node::Str) => Node::Str,
                        (Some(Node::Int | Node::Float), Node::Int | Node::Float) => Node::Float,
                        _ => return Ok(Node::Text),
                    });
                }
                Ok(common.unwrap_or(Node::Text))
            }
            _ => Ok(Node::Text),
        }
    }
}

/// The column type of `enum`/`const` values: their common scalar type, or
/// JSON text.
fn type_of_values(values: &[Value]) -> Node {
    let mut shape = Shape::Unknown;
    for v in values {
        match v {
            Value::Array(_) | Value::Object(_) => return Node::Text,
            v => shape.merge(v),
        }
    }
    shape.into_node()
}
