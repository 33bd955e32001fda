//! The compiled type tree of a JSON message type (what each Arrow column
//! expects); the decoder that writes payloads into it is `super::JsonDecoder`.

use std::collections::HashMap;

use arrow_schema::{DataType, Fields};

use crate::{field, list_of};

/// What one column expects; mirrors its Arrow type.
#[derive(Debug)]
pub(super) enum Node {
    /// `Null`: only JSON null.
    Null,
    /// `Boolean`.
    Bool,
    /// `Int64`.
    Int,
    /// `Float64`.
    Float,
    /// `Utf8`: JSON strings.
    Str,
    /// `Utf8` holding any value's compact JSON text.
    Text,
    /// `List` of the element type.
    List(Box<Node>),
    /// `Struct`.
    Struct(StructNode),
}

/// The fields of a struct node.
#[derive(Debug)]
pub(super) struct StructNode {
    pub(super) names: Vec<Box<str>>,
    pub(super) children: Vec<Node>,
    /// Name → position, for structs too wide for a linear scan.
    pub(super) index: Option<HashMap<Box<str>, usize>>,
}

/// Structs with more fields than this look keys up in a hash map.
const LINEAR_LOOKUP_MAX: usize = 12;

impl StructNode {
    pub(super) fn new(names: Vec<Box<str>>, children: Vec<Node>) -> Self {
        let index = (names.len() > LINEAR_LOOKUP_MAX).then(|| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect()
        });
        Self {
            names,
            children,
            index,
        }
    }

    /// Position of field `key`; `hint` is tried first (keys usually arrive in
    /// schema order).
    #[inline]
    pub(super) fn find(&self, key: &str, hint: usize) -> Option<usize> {
        if let Some(n) = self.names.get(hint)
            && **n == *key
        {
            return Some(hint);
        }
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.names.iter().position(|n| **n == *key),
        }
    }
}

impl Node {
    pub(super) fn data_type(&self) -> DataType {
        match self {
            Node::Null => DataType::Null,
            Node::Bool => DataType::Boolean,
            Node::Int => DataType::Int64,
            Node::Float => DataType::Float64,
            Node::Str | Node::Text => DataType::Utf8,
            Node::List(item) => list_of(item.data_type()),
            Node::Struct(s) => DataType::Struct(Fields::from(
                s.names
                    .iter()
                    .zip(&s.children)
                    .map(|(n, c)| field(n.as_ref(), c.data_type()))
                    .collect::<Vec<_>>(),
            )),
        }
    }
}
