//! Decoding of JSON payloads (MCAP message encoding `json`), typed from a
//! `jsonschema` or inferred from sample messages.
//!
//! Two ways to get a decoder:
//!
//! - [`decoder`]: from a channel's JSON Schema (schema encoding `jsonschema`).
//! - [`infer`]: for schemaless channels, from the first payloads of the topic.
//!
//! # Types
//!
//! | JSON Schema | Arrow |
//! |---|---|
//! | `object` with `properties` | `Struct`, fields in the order `properties` lists them |
//! | `array` with `items` | `List` of the item type (`List` of JSON text without `items`) |
//! | `integer` / `number` / `string` / `boolean` / `null` | `Int64` / `Float64` / `Utf8` / `Boolean` / `Null` |
//! | `["T", "null"]`, `anyOf`/`oneOf` of one schema and `{"type": "null"}` | the type of `T` |
//! | `["integer", "number"]` | `Float64` |
//! | local `$ref` (`#/definitions/...`, `#/$defs/...`, any `#/` pointer) | the referenced schema's type |
//! | `enum`/`const` without `type`, all strings / integers / numbers / booleans | `Utf8` / `Int64` / `Float64` / `Boolean` |
//! | anything else: other `oneOf`/`anyOf`/`allOf`, objects without properties, tuples, `{}`, remote refs | `Utf8` holding the value's JSON text |
//!
//! Every field is nullable. A recursive `$ref` is expanded at most
//! [`MAX_REF_REPEAT`] times along one path and nesting is capped at
//! `MAX_SCHEMA_DEPTH`; deeper values are kept as JSON text. The message
//! type is always a `Struct`: a schema (or inferred type) whose root is not an
//! object with properties becomes a struct with one field, `value`.
//!
//! "JSON text" columns hold the value written compactly (whitespace outside
//! strings removed, strings and numbers exactly as in the payload), so they
//! parse back to the same value; JSON `null` is a SQL null there too.
//!
//! # Decoding
//!
//! Payloads are parsed by a strict RFC 8259 parser that writes straight into
//! the [`ColumnBuilder`]: integers stay exact (`u64` values above `i64::MAX`
//! are an error in an `Int64` column and fine in a `Float64` one), numbers
//! with no fractional part (`3.0`, `1e3`) are accepted as integers, missing
//! keys and `null` are null, keys the type does not know are skipped
//! (validated), and when a key repeats the last value wins (as in
//! `json.loads`). A value of the wrong kind is an error naming its JSON path,
//! e.g. `$.status[2].level: expected integer, got string`. Invalid UTF-8,
//! invalid JSON and nesting deeper than [`MAX_DEPTH`] are errors; no payload
//! panics.
//!
//! # Inference
//!
//! [`infer`] merges the types of the samples: objects merge key by key (new
//! keys appended in the order first seen), arrays merge their elements,
//! integer and number give `Float64` (as do integers above `i64::MAX`), `null`
//! merged with anything gives that thing, and any other conflict gives `Utf8`
//! JSON text. A field only ever seen as `null` (or an array only ever empty,
//! or an object only ever `{}`) is JSON text as well, so later messages that
//! do carry a value keep it. Objects with more than `MAX_INFERRED_FIELDS`
//! distinct keys (maps keyed by ids) are JSON text.

use std::sync::Arc;

use super::{DecodeError, MessageDecoder};
use logsql_readers::model::Channel;

mod infer;
mod parser;
mod path_error;
mod schema;
mod types;
mod value;

use crate::ColumnBuilder;
use arrow_schema::DataType;
use infer::Shape;
use parser::Parser;
use parser::parse_document;
use path_error::Fail;
use path_error::write_json_string;
use schema::Compiler;
use types::{Node, StructNode};
use value::{Value, get};

/// Deepest nesting of arrays and objects accepted in a payload.
pub const MAX_DEPTH: usize = 128;

/// Deepest nesting of arrays and objects accepted in a schema document (a
/// typed level takes two: the schema object and its `properties`).
pub(crate) const MAX_SCHEMA_DOCUMENT_DEPTH: usize = 512;

/// Deepest nesting of typed (struct / list) levels compiled from a schema;
/// values below it are JSON text.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

/// How often one `$ref` may be expanded inside itself (recursive schemas);
/// the next level is JSON text.
pub const MAX_REF_REPEAT: usize = 3;

/// Most typed fields (all levels together) one schema may compile to.
pub(crate) const MAX_SCHEMA_FIELDS: usize = 10_000;

/// Objects with more distinct keys than this over the samples are inferred
/// as JSON text rather than a struct.
pub(crate) const MAX_INFERRED_FIELDS: usize = 1_000;

/// The decoder for `channel`, compiled from its JSON Schema
/// (`channel.schema`, schema encoding `jsonschema`).
///
/// A channel without a schema is an error: its types have to be inferred from
/// sample payloads with [`infer`].
pub fn decoder(channel: &Channel) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    let schema = channel.schema.as_deref().unwrap_or(&[]);
    if schema.is_empty() {
        return Err(DecodeError::new(format!(
            "JSON channel {:?} has no schema: its types must be inferred from sample messages",
            channel.topic
        )));
    }
    let name = channel.message_type.as_deref().unwrap_or("");
    compile_schema(schema)
        .map(|d| match name {
            // Without a type name the description keeps the schema's `title`.
            "" => Arc::new(d) as Arc<dyn MessageDecoder>,
            name => Arc::new(d.described(name)),
        })
        .map_err(|e| match name {
            "" => e.context("jsonschema"),
            _ => e.context(format_args!("jsonschema {name}")),
        })
}

/// A decoder whose types are inferred from `samples`, the first payloads of a
/// schemaless JSON topic (see the module docs for the merge rules).
///
/// Samples that are not valid JSON are skipped (decoding them later is an
/// error); when no sample is valid, the error names the first problem.
pub fn infer(
    samples: &mut dyn Iterator<Item = &[u8]>,
) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    let mut shape = Shape::Unknown;
    let mut used = 0usize;
    let mut first_error = None;
    for (i, sample) in samples.enumerate() {
        match parse_document(sample, MAX_DEPTH) {
            Ok(value) => {
                shape.merge(&value);
                used += 1;
            }
            Err(e) => {
                first_error.get_or_insert_with(|| e.context(format_args!("sample {i}")));
            }
        }
    }
    if used == 0 {
        return Err(first_error.unwrap_or_else(|| {
            DecodeError::new("no sample messages to infer the JSON message type from")
        }));
    }
    let decoder = JsonDecoder::new(shape.into_node())
        .described_as(format!("json (inferred from {used} samples)"));
    Ok(Arc::new(decoder))
}

/// The decoder a [`MessageDecoder::portable_schema`] of a JSON decoder
/// describes, described as `description` (its [`MessageDecoder::describe`]).
pub fn from_portable_schema(
    schema: &[u8],
    description: &str,
) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    let decoder = compile_schema(schema)?.described_as(description.to_string());
    Ok(Arc::new(decoder))
}

/// A JSON message decoder (from a schema or inferred).
#[derive(Debug)]
struct JsonDecoder {
    root: Node,
    /// The root is not a struct: it is field `value` of a one-field struct.
    wrapped: bool,
    data_type: DataType,
    description: String,
}

impl JsonDecoder {
    fn new(node: Node) -> Self {
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

    fn described(self, name: &str) -> Self {
        let description = match name {
            "" => "json (jsonschema)".to_owned(),
            name => format!("json {name} (jsonschema)"),
        };
        self.described_as(description)
    }

    fn described_as(mut self, description: String) -> Self {
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

/// Writes `node` as the JSON Schema that compiles back into the same node
/// (`{}` is any value as JSON text).
fn write_portable_schema(node: &Node, out: &mut String) {
    match node {
        Node::Null => out.push_str(r#"{"type":"null"}"#),
        Node::Bool => out.push_str(r#"{"type":"boolean"}"#),
        Node::Int => out.push_str(r#"{"type":"integer"}"#),
        Node::Float => out.push_str(r#"{"type":"number"}"#),
        Node::Str => out.push_str(r#"{"type":"string"}"#),
        Node::Text => out.push_str("{}"),
        Node::List(item) => {
            out.push_str(r#"{"type":"array","items":"#);
            write_portable_schema(item, out);
            out.push('}');
        }
        Node::Struct(s) => {
            out.push_str(r#"{"type":"object","properties":{"#);
            for (i, (name, child)) in s.names.iter().zip(&s.children).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, name);
                out.push(':');
                write_portable_schema(child, out);
            }
            out.push_str("}}");
        }
    }
}

/// Compiles a JSON Schema document into a decoder.
fn compile_schema(schema: &[u8]) -> Result<JsonDecoder, DecodeError> {
    let root = parse_document(schema, MAX_SCHEMA_DOCUMENT_DEPTH)?;
    let mut compiler = Compiler {
        root: &root,
        ref_stack: Vec::new(),
        fields: 0,
    };
    let node = compiler.compile(&root, 0)?;
    let title = match &root {
        Value::Object(pairs) => match get(pairs, "title") {
            Some(Value::Str(t)) => t.clone(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    Ok(JsonDecoder::new(node).described(&title))
}
