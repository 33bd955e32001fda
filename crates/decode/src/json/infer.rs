//! Types inferred from sample payloads: shapes merged value by value (see the
//! parent module for the merge rules).

use std::collections::HashMap;

use super::MAX_INFERRED_FIELDS;
use super::types::{Node, StructNode};
use super::value::Value;

/// The merged type of the samples seen so far.
#[derive(Debug)]
pub(super) enum Shape {
    /// Only nulls (or nothing) so far.
    Unknown,
    Bool,
    Int,
    Float,
    Str,
    /// Conflicting kinds: JSON text.
    Text,
    List(Box<Shape>),
    /// Fields in first-seen order.
    Struct {
        names: Vec<String>,
        shapes: Vec<Shape>,
        index: HashMap<String, usize>,
    },
}

impl Shape {
    /// The shape of one value on its own.
    fn of(value: &Value) -> Shape {
        let mut s = Shape::Unknown;
        s.merge(value);
        s
    }

    pub(super) fn merge(&mut self, value: &Value) {
        match (&mut *self, value) {
            (_, Value::Null) | (Shape::Text, _) => {}
            (Shape::Unknown, Value::Array(_) | Value::Object(_)) => {
                *self = match value {
                    Value::Array(_) => Shape::List(Box::new(Shape::Unknown)),
                    _ => Shape::Struct {
                        names: Vec::new(),
                        shapes: Vec::new(),
                        index: HashMap::new(),
                    },
                };
                self.merge(value);
            }
            (Shape::Unknown, Value::Bool(_)) => *self = Shape::Bool,
            (Shape::Unknown, Value::Int(_)) => *self = Shape::Int,
            (Shape::Unknown, Value::UInt(_) | Value::Float(_)) => *self = Shape::Float,
            (Shape::Unknown, Value::Str(_)) => *self = Shape::Str,
            (Shape::Bool, Value::Bool(_))
            | (Shape::Int, Value::Int(_))
            | (Shape::Float, Value::Int(_) | Value::UInt(_) | Value::Float(_))
            | (Shape::Str, Value::Str(_)) => {}
            (Shape::Int, Value::UInt(_) | Value::Float(_)) => *self = Shape::Float,
            (Shape::List(item), Value::Array(values)) => {
                for v in values {
                    item.merge(v);
                }
            }
            (
                Shape::Struct {
                    names,
                    shapes,
                    index,
                },
                Value::Object(pairs),
            ) => {
                for (k, v) in pairs {
                    match index.get(k) {
                        Some(&i) => shapes[i].merge(v),
                        None => {
                            index.insert(k.clone(), names.len());
                            names.push(k.clone());
                            shapes.push(Shape::of(v));
                        }
                    }
                }
                if names.len() > MAX_INFERRED_FIELDS {
                    *self = Shape::Text;
                }
            }
            _ => *self = Shape::Text,
        }
    }

    pub(super) fn into_node(self) -> Node {
        match self {
            Shape::Unknown | Shape::Text => Node::Text,
            Shape::Bool => Node::Bool,
            Shape::Int => Node::Int,
            Shape::Float => Node::Float,
            Shape::Str => Node::Str,
            Shape::List(item) => Node::List(Box::new(item.into_node())),
            Shape::Struct { names, .. } if names.is_empty() => Node::Text,
            Shape::Struct { names, shapes, .. } => Node::Struct(StructNode::new(
                names.into_iter().map(String::into_boxed_str).collect(),
                shapes.into_iter().map(Shape::into_node).collect(),
            )),
        }
    }
}
