//! The compiled type tree of a JSON message type (what each Arrow column
//! expects) and the decoder that writes payloads into it.

use std::collections::HashMap;

use arrow_schema::{DataType, Fields};

use super::parser::Parser;
use super::path_error::Fail;
use super::write_portable_schema;
use crate::{ColumnBuilder, DecodeError, MessageDecoder, field, list_of};

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
    fn data_type(&self) -> DataType {
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

/// A JSON message decoder (from a schema or inferred).
#[derive(Debug)]
pub(super) struct JsonDecoder {
    pub(super) root: Node,
    /// The root is not a struct: it is field `value` of a one-field struct.
    wrapped: bool,
    data_type: DataType,
    pub(super) description: String,
}

impl JsonDecoder {
    pub(super) fn new(node: Node) -> Self {
        let (root, wrapped) = match node {
            Node::Struct(s) if !s.names.is_empty() => (Node::Struct(s), false),
            other => (
                Node::Struct(StructNode::new(vec!["value".into()], vec![other])),
                true,
            ),
        };
        let data_type = root.data_type();
        Self {
            root,
            wrapped,
            data_type,
            description: String::new(),
        }
    }

    pub(super) fn described(self, name: &str) -> Self {
        let description = match name {
            "" => "json (jsonschema)".to_owned(),
            name => format!("json {name} (jsonschema)"),
        };
        self.described_as(description)
    }

    pub(super) fn described_as(mut self, description: String) -> Self {
        self.description = description;
        self
    }
}

impl MessageDecoder for JsonDecoder {
    fn data_type(&self) -> &DataType {
        &self.data_type
    }

    fn portable_schema(&self) -> Option<Vec<u8>> {
        let node = match (&self.root, self.wrapped) {
            (Node::Struct(s), true) => s.children.first()?,
            (root, _) => root,
        };
        let mut out = String::new();
        write_portable_schema(node, &mut out);
        Some(out.into_bytes())
    }

    fn decode(&self, payload: &[u8], out: &mut ColumnBuilder) -> Result<(), DecodeError> {
        let text = std::str::from_utf8(payload).map_err(|e| {
            DecodeError::new(format!(
                "payload is not valid UTF-8 (at byte {})",
                e.valid_up_to()
            ))
        })?;
        let mut p = Parser::new(text);
        let result = if self.wrapped {
            // The document is field `value`; paths inside it start at `$`.
            match (&self.root, out.field(0)) {
                (Node::Struct(s), Ok(child)) => match s.children.first() {
                    Some(node) => p.decode(node, child, 0),
                    None => Err(Fail::new("internal: wrapped root")),
                },
                (_, Err(e)) => Err(Fail::builder(e)),
                _ => Err(Fail::new("internal: wrapped root")),
            }
            .and_then(|()| out.close_struct().map_err(Fail::builder))
        } else {
            p.decode(&self.root, out, 0)
        };
        result.and_then(|()| p.finish()).map_err(Fail::into_error)
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
