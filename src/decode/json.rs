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
//! [`MAX_SCHEMA_DEPTH`]; deeper values are kept as JSON text. The message
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
//! do carry a value keep it. Objects with more than [`MAX_INFERRED_FIELDS`]
//! distinct keys (maps keyed by ids) are JSON text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use arrow_schema::{DataType, Fields};

use super::{ColumnBuilder, DecodeError, MessageDecoder, field, list_of};
use crate::model::Channel;

/// Deepest nesting of arrays and objects accepted in a payload.
pub const MAX_DEPTH: usize = 128;

/// Deepest nesting of arrays and objects accepted in a schema document (a
/// typed level takes two: the schema object and its `properties`).
pub const MAX_SCHEMA_DOCUMENT_DEPTH: usize = 512;

/// Deepest nesting of typed (struct / list) levels compiled from a schema;
/// values below it are JSON text.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// How often one `$ref` may be expanded inside itself (recursive schemas);
/// the next level is JSON text.
pub const MAX_REF_REPEAT: usize = 3;

/// Most typed fields (all levels together) one schema may compile to.
pub const MAX_SCHEMA_FIELDS: usize = 10_000;

/// Objects with more distinct keys than this over the samples are inferred
/// as JSON text rather than a struct.
pub const MAX_INFERRED_FIELDS: usize = 1_000;

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

// ---------------------------------------------------------------------------
// The compiled type tree.

/// What one column expects; mirrors its Arrow type.
#[derive(Debug)]
enum Node {
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
struct StructNode {
    names: Vec<Box<str>>,
    children: Vec<Node>,
    /// Name → position, for structs too wide for a linear scan.
    index: Option<HashMap<Box<str>, usize>>,
}

/// Structs with more fields than this look keys up in a hash map.
const LINEAR_LOOKUP_MAX: usize = 12;

impl StructNode {
    fn new(names: Vec<Box<str>>, children: Vec<Node>) -> Self {
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
    fn find(&self, key: &str, hint: usize) -> Option<usize> {
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

// ---------------------------------------------------------------------------
// Errors with JSON paths.

/// One step of a JSON path.
#[derive(Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A decoding failure; the path is collected innermost first while the
/// error travels up.
#[derive(Debug)]
struct FailInner {
    message: String,
    path: Vec<Seg>,
}

/// Boxed so `Result<(), Fail>` stays one pointer wide on the hot path.
#[derive(Debug)]
struct Fail(Box<FailInner>);

impl std::ops::Deref for Fail {
    type Target = FailInner;
    fn deref(&self) -> &FailInner {
        &self.0
    }
}

impl std::ops::DerefMut for Fail {
    fn deref_mut(&mut self) -> &mut FailInner {
        &mut self.0
    }
}

impl Fail {
    fn new(message: impl Into<String>) -> Self {
        Fail(Box::new(FailInner {
            message: message.into(),
            path: Vec::new(),
        }))
    }

    fn builder(e: DecodeError) -> Self {
        Self::new(e.message.into_string())
    }

    fn at(mut self, seg: Seg) -> Self {
        self.path.push(seg);
        self
    }

    fn into_error(self) -> DecodeError {
        let mut s = String::from("$");
        for seg in self.path.iter().rev() {
            match seg {
                Seg::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
                Seg::Key(k) if is_identifier(k) => {
                    s.push('.');
                    s.push_str(k);
                }
                Seg::Key(k) => {
                    s.push('[');
                    write_json_string(&mut s, k);
                    s.push(']');
                }
            }
        }
        DecodeError::new(format!("{s}: {}", self.message))
    }
}

fn is_identifier(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Appends `s` as a JSON string literal.
fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The JSON kind starting with byte `b`, for "got ..." messages.
fn kind_of(b: u8) -> &'static str {
    match b {
        b'"' => "string",
        b'{' => "object",
        b'[' => "array",
        b't' | b'f' => "boolean",
        b'n' => "null",
        b'-' | b'0'..=b'9' => "number",
        _ => "invalid JSON",
    }
}

// ---------------------------------------------------------------------------
// The parser.

/// A JSON number, integers exact.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    /// An integer that fits `i64`.
    I(i64),
    /// An integer above `i64::MAX` that fits `u64`.
    U(u64),
    /// Any other number (fraction, exponent, or an integer beyond `u64`).
    F(f64),
}

/// A strict RFC 8259 parser over text already checked to be UTF-8.
struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Reused buffer for JSON-text columns.
    scratch: String,
    /// Deepest nesting accepted.
    max_depth: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            scratch: String::new(),
            max_depth: MAX_DEPTH,
        }
    }

    fn syntax(&self, what: &str) -> Fail {
        match self.bytes.get(self.pos) {
            None => Fail::new(format!(
                "invalid JSON: {what} at byte {}, the end of the payload",
                self.pos
            )),
            Some(_) => Fail::new(format!("invalid JSON: {what} at byte {}", self.pos)),
        }
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte after whitespace (not consumed).
    #[inline]
    fn peek(&mut self) -> Result<u8, Fail> {
        self.skip_ws();
        self.bytes
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.syntax("expected a value"))
    }

    /// Only whitespace may follow the document.
    fn finish(&mut self) -> Result<(), Fail> {
        self.skip_ws();
        if self.pos < self.bytes.len() {
            return Err(self.syntax("unexpected text after the value"));
        }
        Ok(())
    }

    /// Consumes `word` (`true`, `false`, `null`).
    fn literal(&mut self, word: &str) -> Result<(), Fail> {
        if self.bytes[self.pos.min(self.bytes.len())..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.syntax("expected a value"))
        }
    }

    /// Consumes `b` after whitespace, or fails with `what`.
    #[inline]
    fn expect(&mut self, b: u8, what: &str) -> Result<(), Fail> {
        if self.peek().ok() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(what))
        }
    }

    /// After an element: `true` when another follows (a `,` was consumed),
    /// `false` at the `close` byte (consumed).
    #[inline]
    fn next_element(&mut self, close: u8) -> Result<bool, Fail> {
        match self.peek().ok() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(self.syntax(if close == b']' {
                "expected ',' or ']'"
            } else {
                "expected ',' or '}'"
            })),
        }
    }

    /// Scans the string starting at the opening quote at `self.pos`; returns
    /// whether it holds escapes and leaves `pos` after the closing quote.
    #[inline]
    fn scan_string(&mut self) -> Result<bool, Fail> {
        self.pos += 1;
        let mut escaped = false;
        loop {
            let rest = self.bytes.get(self.pos..).unwrap_or_default();
            let Some(i) = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            else {
                self.pos = self.bytes.len();
                return Err(self.syntax("unterminated string"));
            };
            self.pos += i;
            match self.bytes[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.pos += 1;
                    match self.bytes.get(self.pos) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1;
                        }
                        Some(b'u') => {
                            self.pos += 1;
                            self.unicode_escape()?;
                        }
                        _ => return Err(self.syntax("invalid escape in string")),
                    }
                }
                _ => return Err(self.syntax("control character in string")),
            }
        }
    }

    /// Four hex digits at `pos` (consumed).
    fn hex4(&mut self) -> Result<u32, Fail> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.syntax("invalid \\u escape"))?;
        let mut v = 0u32;
        for &d in digits {
            let x = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.syntax("invalid \\u escape"))?;
            v = v * 16 + x;
        }
        self.pos += 4;
        Ok(v)
    }

    /// The character of a `\u` escape whose `\u` was consumed (a surrogate
    /// pair takes the following `\uXXXX` too).
    fn unicode_escape(&mut self) -> Result<char, Fail> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                    return Err(self.syntax("lone surrogate in \\u escape"));
                }
                self.pos += 2;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(self.syntax("lone surrogate in \\u escape"));
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone surrogate in \\u escape")),
            v => v,
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid \\u escape"))
    }

    /// The string at `pos` (which must be `"`), unescaped.
    fn string(&mut self) -> Result<Cow<'a, str>, Fail> {
        let start = self.pos;
        let escaped = self.scan_string()?;
        let raw = self
            .text
            .get(start + 1..self.pos - 1)
            .ok_or_else(|| Fail::new("internal: string bounds"))?;
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        let rb = raw.as_bytes();
        let (mut i, mut plain) = (0, 0);
        while i < rb.len() {
            if rb[i] != b'\\' {
                i += 1;
                continue;
            }
            out.push_str(raw.get(plain..i).unwrap_or_default());
            match rb.get(i + 1) {
                Some(b'u') => {
                    // Already validated by `scan_string`; decode it again here.
                    let mut sub = Parser::new(raw);
                    sub.pos = i + 2;
                    out.push(sub.unicode_escape()?);
                    i = sub.pos;
                }
                Some(&c) => {
                    out.push(match c {
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        c => c as char,
                    });
                    i += 2;
                }
                None => return Err(Fail::new("internal: dangling escape")),
            }
            plain = i;
        }
        out.push_str(raw.get(plain..).unwrap_or_default());
        Ok(Cow::Owned(out))
    }

    /// The number at `pos`.
    fn number(&mut self) -> Result<Num, Fail> {
        let start = self.pos;
        let b = self.bytes;
        let mut p = self.pos;
        if b.get(p) == Some(&b'-') {
            p += 1;
        }
        match b.get(p) {
            Some(b'0') => p += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = b.get(p) {
                    p += 1;
                }
            }
            _ => {
                self.pos = p;
                return Err(self.syntax("invalid number"));
            }
        }
        let mut integer = true;
        if b.get(p) == Some(&b'.') {
            integer = false;
            p += 1;
            if !matches!(b.get(p), Some(b'0'..=b'9')) {
                self.pos = p;
                return Err(self.syntax("invalid number"));
            }
            while let Some(b'0'..=b'9') = b.get(p) {
                p += 1;
            }
        }
        if let Some(b'e' | b'E') = b.get(p) {
            integer = false;
            p += 1;
            if let Some(b'+' | b'-') = b.get(p) {
                p += 1;
            }
            if !matches!(b.get(p), Some(b'0'..=b'9')) {
                self.pos = p;
                return Err(self.syntax("invalid number"));
            }
            while let Some(b'0'..=b'9') = b.get(p) {
                p += 1;
            }
        }
        self.pos = p;
        let text = self.text.get(start..p).unwrap_or_default();
        if integer {
            if let Ok(v) = text.parse::<i64>() {
                return Ok(Num::I(v));
            }
            if let Ok(v) = text.parse::<u64>() {
                return Ok(Num::U(v));
            }
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Num::F(v)),
            _ => {
                self.pos = start;
                Err(self.syntax("number out of range"))
            }
        }
    }

    /// Parses the value at `pos` as `node` and appends it to `out`.
    fn decode(&mut self, node: &Node, out: &mut ColumnBuilder, depth: usize) -> Result<(), Fail> {
        let b = self.peek()?;
        if b == b'n' {
            self.literal("null")?;
            out.append_null();
            return Ok(());
        }
        let expected = match node {
            Node::Bool => match b {
                b't' => {
                    self.literal("true")?;
                    return out.append_bool(true).map_err(Fail::builder);
                }
                b'f' => {
                    self.literal("false")?;
                    return out.append_bool(false).map_err(Fail::builder);
                }
                _ => "boolean",
            },
            Node::Int => match b {
                b'-' | b'0'..=b'9' => {
                    let start = self.pos;
                    return match self.number()? {
                        Num::I(v) => out.append_i64(v).map_err(Fail::builder),
                        Num::F(f)
                            if f.fract() == 0.0
                                && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0)
                                    .contains(&f) =>
                        {
                            out.append_i64(f as i64).map_err(Fail::builder)
                        }
                        Num::F(f) if f.fract() != 0.0 => Err(Fail::new(format!(
                            "expected integer, got number {}",
                            self.text.get(start..self.pos).unwrap_or_default()
                        ))),
                        Num::U(_) | Num::F(_) => Err(Fail::new(format!(
                            "integer {} is out of the Int64 range",
                            self.text.get(start..self.pos).unwrap_or_default()
                        ))),
                    };
                }
                _ => "integer",
            },
            Node::Float => match b {
                b'-' | b'0'..=b'9' => {
                    return match self.number()? {
                        Num::I(v) => out.append_f64(v as f64),
                        Num::U(v) => out.append_f64(v as f64),
                        Num::F(v) => out.append_f64(v),
                    }
                    .map_err(Fail::builder);
                }
                _ => "number",
            },
            Node::Str => match b {
                b'"' => {
                    let s = self.string()?;
                    return out.append_str(&s).map_err(Fail::builder);
                }
                _ => "string",
            },
            Node::Text => {
                let mut text = std::mem::take(&mut self.scratch);
                text.clear();
                let result = self
                    .skip(Some(&mut text), depth)
                    .and_then(|()| out.append_str(&text).map_err(Fail::builder));
                self.scratch = text;
                return result;
            }
            Node::Null => "null",
            Node::List(item) => match b {
                b'[' => return self.decode_list(item, out, depth),
                _ => "array",
            },
            Node::Struct(s) => match b {
                b'{' => return self.decode_struct(s, out, depth),
                _ => "object",
            },
        };
        match kind_of(b) {
            "invalid JSON" => Err(self.syntax("expected a value")),
            got => Err(Fail::new(format!("expected {expected}, got {got}"))),
        }
    }

    fn check_depth(&self, depth: usize) -> Result<(), Fail> {
        if depth >= self.max_depth {
            return Err(Fail::new(format!(
                "nesting deeper than {} levels at byte {}",
                self.max_depth, self.pos
            )));
        }
        Ok(())
    }

    /// Decodes the array at `pos` as one list row of `out`.
    ///
    /// On error the elements already appended are removed again, so `out` and
    /// its child hold only complete rows. (`ColumnBuilder::truncate` cannot
    /// do that for a row that was never closed, so every level rolls back its
    /// own partial row before the error travels up.)
    fn decode_list(
        &mut self,
        item: &Node,
        out: &mut ColumnBuilder,
        depth: usize,
    ) -> Result<(), Fail> {
        self.check_depth(depth)?;
        self.pos += 1; // '['
        let child = out.list_child().map_err(Fail::builder)?;
        let start = child.len();
        if let Err(e) = self.list_elements(item, child, depth) {
            child.truncate(start);
            return Err(e);
        }
        out.close_list().map_err(Fail::builder)
    }

    fn list_elements(
        &mut self,
        item: &Node,
        child: &mut ColumnBuilder,
        depth: usize,
    ) -> Result<(), Fail> {
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        let mut i = 0usize;
        loop {
            self.decode(item, child, depth + 1)
                .map_err(|e| e.at(Seg::Index(i)))?;
            i += 1;
            if !self.next_element(b']')? {
                return Ok(());
            }
        }
    }

    /// Decodes the object at `pos` as one struct row of `out`; on error the
    /// fields already appended are removed again (see [`Self::decode_list`]).
    fn decode_struct(
        &mut self,
        s: &StructNode,
        out: &mut ColumnBuilder,
        depth: usize,
    ) -> Result<(), Fail> {
        self.check_depth(depth)?;
        self.pos += 1; // '{'
        let row = out.len();
        let fields = out.fields_mut().map_err(Fail::builder)?;
        if let Err(e) = self.struct_members(s, fields, row, depth) {
            for f in fields.iter_mut() {
                f.truncate(row);
            }
            return Err(e);
        }
        out.close_struct().map_err(Fail::builder)
    }

    fn struct_members(
        &mut self,
        s: &StructNode,
        fields: &mut [ColumnBuilder],
        row: usize,
        depth: usize,
    ) -> Result<(), Fail> {
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(());
        }
        let mut hint = 0usize;
        loop {
            if self.peek()? != b'"' {
                return Err(self.syntax("expected a key string"));
            }
            let key = self.string()?;
            self.expect(b':', "expected ':'")?;
            match s.find(&key, hint) {
                Some(i) => {
                    hint = i + 1;
                    let (Some(node), Some(child)) = (s.children.get(i), fields.get_mut(i)) else {
                        return Err(Fail::new("internal: struct field count"));
                    };
                    if child.len() > row {
                        // A repeated key: the last value wins.
                        child.truncate(row);
                    }
                    self.decode(node, child, depth + 1)
                        .map_err(|e| e.at(Seg::Key(key.into_owned())))?;
                }
                None => self
                    .skip(None, depth + 1)
                    .map_err(|e| e.at(Seg::Key(key.into_owned())))?,
            }
            if !self.next_element(b'}')? {
                return Ok(());
            }
        }
    }

    /// Validates the value at `pos` and moves past it; with `out`, writes it
    /// there as compact JSON text.
    fn skip(&mut self, mut out: Option<&mut String>, depth: usize) -> Result<(), Fail> {
        let b = self.peek()?;
        let start = self.pos;
        match b {
            b'"' => {
                self.scan_string()?;
            }
            b'-' | b'0'..=b'9' => {
                self.number()?;
            }
            b't' => self.literal("true")?,
            b'f' => self.literal("false")?,
            b'n' => self.literal("null")?,
            b'[' | b'{' => {
                self.check_depth(depth)?;
                let close = if b == b'[' { b']' } else { b'}' };
                self.pos += 1;
                if let Some(o) = out.as_deref_mut() {
                    o.push(b as char);
                }
                if self.peek()? != close {
                    loop {
                        if b == b'{' {
                            if self.peek()? != b'"' {
                                return Err(self.syntax("expected a key string"));
                            }
                            let key_start = self.pos;
                            self.scan_string()?;
                            if let Some(o) = out.as_deref_mut() {
                                o.push_str(self.text.get(key_start..self.pos).unwrap_or_default());
                            }
                            self.expect(b':', "expected ':'")?;
                            if let Some(o) = out.as_deref_mut() {
                                o.push(':');
                            }
                        }
                        self.skip(out.as_deref_mut(), depth + 1)?;
                        if !self.next_element(close)? {
                            break;
                        }
                        if let Some(o) = out.as_deref_mut() {
                            o.push(',');
                        }
                    }
                } else {
                    self.pos += 1;
                }
                if let Some(o) = out {
                    o.push(close as char);
                }
                return Ok(());
            }
            _ => return Err(self.syntax("expected a value")),
        }
        if let Some(o) = out {
            o.push_str(self.text.get(start..self.pos).unwrap_or_default());
        }
        Ok(())
    }

    /// Parses the value at `pos` into a [`Value`] tree.
    fn value(&mut self, depth: usize) -> Result<Value, Fail> {
        let b = self.peek()?;
        Ok(match b {
            b'"' => Value::Str(self.string()?.into_owned()),
            b'-' | b'0'..=b'9' => match self.number()? {
                Num::I(v) => Value::Int(v),
                Num::U(v) => Value::UInt(v),
                Num::F(v) => Value::Float(v),
            },
            b't' => {
                self.literal("true")?;
                Value::Bool(true)
            }
            b'f' => {
                self.literal("false")?;
                Value::Bool(false)
            }
            b'n' => {
                self.literal("null")?;
                Value::Null
            }
            b'[' => {
                self.check_depth(depth)?;
                self.pos += 1;
                let mut items = Vec::new();
                if self.peek()? == b']' {
                    self.pos += 1;
                } else {
                    loop {
                        items.push(self.value(depth + 1)?);
                        if !self.next_element(b']')? {
                            break;
                        }
                    }
                }
                Value::Array(items)
            }
            b'{' => {
                self.check_depth(depth)?;
                self.pos += 1;
                let mut pairs = Vec::new();
                if self.peek()? == b'}' {
                    self.pos += 1;
                } else {
                    loop {
                        if self.peek()? != b'"' {
                            return Err(self.syntax("expected a key string"));
                        }
                        let key = self.string()?.into_owned();
                        self.expect(b':', "expected ':'")?;
                        pairs.push((key, self.value(depth + 1)?));
                        if !self.next_element(b'}')? {
                            break;
                        }
                    }
                }
                Value::Object(pairs)
            }
            _ => return Err(self.syntax("expected a value")),
        })
    }
}

/// Parses a whole JSON document (UTF-8 bytes, nested at most `max_depth`
/// levels) into a [`Value`].
fn parse_document(bytes: &[u8], max_depth: usize) -> Result<Value, DecodeError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| DecodeError::new(format!("not valid UTF-8 (at byte {})", e.valid_up_to())))?;
    let mut p = Parser::new(text);
    p.max_depth = max_depth;
    let value = p.value(0).map_err(Fail::into_error)?;
    p.finish().map_err(Fail::into_error)?;
    Ok(value)
}

// ---------------------------------------------------------------------------
// A parsed JSON value (schemas and inference samples).

/// A JSON value with object keys in document order.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<Value>),
    /// Keys in document order; a repeated key appears twice (the last wins).
    Object(Vec<(String, Value)>),
}

/// The last value of `key` in an object's pairs.
fn get<'v>(pairs: &'v [(String, Value)], key: &str) -> Option<&'v Value> {
    pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

// ---------------------------------------------------------------------------
// JSON Schema → types.

struct Compiler<'v> {
    root: &'v Value,
    /// `$ref`s being expanded on the current path.
    ref_stack: Vec<&'v str>,
    /// Typed fields compiled so far (against [`MAX_SCHEMA_FIELDS`]).
    fields: usize,
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
    fn compile(&mut self, schema: &'v Value, depth: usize) -> Result<Node, DecodeError> {
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
    /// gives that schema's type; anything else is JSON text.
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

// ---------------------------------------------------------------------------
// Inference.

/// The merged type of the samples seen so far.
#[derive(Debug)]
enum Shape {
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

    fn merge(&mut self, value: &Value) {
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

    fn into_node(self) -> Node {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Value, DecodeError> {
        parse_document(s.as_bytes(), MAX_DEPTH)
    }

    #[test]
    fn parses_scalars_exactly() {
        assert_eq!(parse("0").unwrap(), Value::Int(0));
        assert_eq!(parse("-0").unwrap(), Value::Int(0));
        assert_eq!(parse("-9223372036854775808").unwrap(), Value::Int(i64::MIN));
        assert_eq!(
            parse("18446744073709551615").unwrap(),
            Value::UInt(u64::MAX)
        );
        assert_eq!(
            parse("18446744073709551616").unwrap(),
            Value::Float(18446744073709551616.0)
        );
        assert_eq!(parse("-3e-07").unwrap(), Value::Float(-3e-07));
        assert_eq!(
            parse(r#""a\u00e9\ud83d\ude00\n\"""#).unwrap(),
            Value::Str("aé😀\n\"".into())
        );
        for bad in [
            "",
            " ",
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "-",
            "tru",
            "nul",
            "[1,]",
            "{\"a\"}",
            "{1:2}",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"a\u{1}\"",
            "1e999",
            "[1] 2",
            "\"abc",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn escapes_in_strings_round_trip() {
        let v = parse(r#""x\u0041\ud83d\ude00\u00e9y\t""#).unwrap();
        assert_eq!(v, Value::Str("xA😀éy\t".into()));
    }
}
