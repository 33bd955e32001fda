//! Compiling a prost-reflect [`MessageDescriptor`] into a decoding plan (field
//! number → column, value kind, presence) and the matching Arrow type.
//!
//! The plan is a tree that mirrors the Arrow type: every message-typed field
//! owns the plan of its sub-message, so a type used at several places is
//! compiled once per place. Recursion is cut where a field's message type is
//! already being expanded on the path from the root: that field becomes
//! [`Kind::Cut`] (`Binary`, the sub-message's encoded bytes).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields};
use prost_reflect::{
    Cardinality, EnumDescriptor, FieldDescriptor, Kind as PbKind, MessageDescriptor, Syntax, Value,
};

use super::super::{DecodeError, duration_type, field, list_of, map_of, timestamp_type};

/// Fields (over the whole plan tree) beyond which a schema is refused: the
/// Arrow type would be unreasonably large.
const MAX_PLAN_FIELDS: usize = 200_000;

/// Message nesting beyond which a sub-message is kept as bytes ([`Kind::Cut`]),
/// even if it is not recursive.
const MAX_DEPTH: usize = 64;

/// Field numbers up to this value are looked up in a dense table.
const DENSE_LOOKUP_LIMIT: u32 = 4096;

/// How a message decodes: its fields in declaration order.
#[derive(Debug)]
pub(super) struct MessagePlan {
    /// Full name (`foxglove.PoseInFrame`), for descriptions.
    pub full_name: Box<str>,
    /// Fields in declaration order (= the Struct's children).
    pub fields: Vec<FieldPlan>,
    /// Field number → index into `fields`.
    lookup: Lookup,
}

/// Field number → field index.
#[derive(Debug)]
enum Lookup {
    /// `table[number]` is the index, or `u32::MAX`.
    Dense(Vec<u32>),
    /// Sorted `(number, index)` pairs.
    Sparse(Vec<(u32, u32)>),
}

/// Whether a field holds one value or a list (repeated fields and maps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// One value; null when absent if the field tracks presence, else its default.
    Single,
    /// A `List` (repeated) or `Map` (map entries as a repeated entry message).
    Repeated,
}

/// One field's decoding plan.
#[derive(Debug)]
pub(super) struct FieldPlan {
    /// Name as in the `.proto` (the Arrow field name).
    pub name: Box<str>,
    /// Field number.
    pub number: u32,
    /// Single or repeated.
    pub shape: Shape,
    /// For [`Shape::Single`]: null when absent (else the default is written).
    pub presence: bool,
    /// Encoded as a group (start/end tags) instead of length-delimited.
    pub group: bool,
    /// The value kind.
    pub kind: Kind,
    /// Indices of the other members of this field's oneof (empty otherwise).
    pub(crate) oneof_siblings: Box<[usize]>,
    /// For enums: the default value's name (fields without presence).
    pub(crate) enum_default: Box<str>,
}

/// The kind of a field's values.
#[derive(Debug)]
pub(super) enum Kind {
    /// `int32` → Int32.
    Int32,
    /// `int64` → Int64.
    Int64,
    /// `uint32` → UInt32.
    UInt32,
    /// `uint64` → UInt64.
    UInt64,
    /// `sint32` (zigzag) → Int32.
    SInt32,
    /// `sint64` (zigzag) → Int64.
    SInt64,
    /// `fixed32` → UInt32.
    Fixed32,
    /// `fixed64` → UInt64.
    Fixed64,
    /// `sfixed32` → Int32.
    SFixed32,
    /// `sfixed64` → Int64.
    SFixed64,
    /// `float` → Float32.
    Float,
    /// `double` → Float64.
    Double,
    /// `bool` → Boolean.
    Bool,
    /// `string` → Utf8; proto3 strings must be UTF-8 (else an error), proto2
    /// strings are repaired (invalid sequences become U+FFFD).
    String {
        /// Whether invalid UTF-8 is an error.
        strict: bool,
    },
    /// `bytes` → Binary.
    Bytes,
    /// An enum → Utf8 name (or the number as text).
    Enum(Arc<EnumPlan>),
    /// A message → Struct (also map entries, whose plan has `keys`/`values`).
    Message(Box<MessagePlan>),
    /// `google.protobuf.Timestamp` → Timestamp(ns, UTC).
    Timestamp,
    /// `google.protobuf.Duration` → Duration(ns).
    Duration,
    /// A recursive (or too deeply nested) message → Binary, its encoded bytes.
    Cut,
}

impl Kind {
    /// The wire type a single value of this kind has (messages: [`super::wire::LEN`];
    /// groups are handled by [`FieldPlan::group`]).
    pub(super) fn wire_type(&self) -> u8 {
        use super::wire::{FIXED32, FIXED64, LEN, VARINT};
        match self {
            Kind::Int32
            | Kind::Int64
            | Kind::UInt32
            | Kind::UInt64
            | Kind::SInt32
            | Kind::SInt64
            | Kind::Bool
            | Kind::Enum(_) => VARINT,
            Kind::Fixed32 | Kind::SFixed32 | Kind::Float => FIXED32,
            Kind::Fixed64 | Kind::SFixed64 | Kind::Double => FIXED64,
            Kind::String { .. }
            | Kind::Bytes
            | Kind::Message(_)
            | Kind::Timestamp
            | Kind::Duration
            | Kind::Cut => LEN,
        }
    }

    /// True for kinds whose repeated fields may be packed.
    pub(super) fn packable(&self) -> bool {
        self.wire_type() != super::wire::LEN
    }

    /// True for message kinds (merged when they occur more than once).
    pub(super) fn is_message(&self) -> bool {
        matches!(
            self,
            Kind::Message(_) | Kind::Timestamp | Kind::Duration | Kind::Cut
        )
    }
}

impl FieldPlan {
    /// The wire type of one occurrence of this field (packed lists aside).
    #[inline]
    pub(super) fn wire_type(&self) -> u8 {
        if self.group {
            super::wire::START_GROUP
        } else {
            self.kind.wire_type()
        }
    }

    /// Whether an occurrence with wire type `wire` belongs to this field
    /// (else it is skipped like an unknown field, as protobuf parsers do).
    #[inline]
    pub(super) fn accepts(&self, wire: u8) -> bool {
        wire == self.wire_type()
            || (self.shape == Shape::Repeated && wire == super::wire::LEN && self.kind.packable())
    }
}

impl MessagePlan {
    /// The index of field `number`, if the message declares it.
    #[inline]
    pub(super) fn index_of(&self, number: u32) -> Option<usize> {
        match &self.lookup {
            Lookup::Dense(table) => match table.get(number as usize) {
                Some(&i) if i != u32::MAX => Some(i as usize),
                _ => None,
            },
            Lookup::Sparse(pairs) => pairs
                .binary_search_by_key(&number, |&(n, _)| n)
                .ok()
                .map(|k| pairs[k].1 as usize),
        }
    }
}

/// Enum number → name.
#[derive(Debug)]
pub(super) struct EnumPlan {
    /// Smallest number (offset of `dense`).
    min: i32,
    /// Names of `min..` (None for gaps), when the numbers are compact.
    dense: Vec<Option<Box<str>>>,
    /// Sorted `(number, name)`, when they are not.
    sparse: Vec<(i32, Box<str>)>,
}

impl EnumPlan {
    fn new(desc: &EnumDescriptor) -> Self {
        // The first name declared for a number wins (aliases), as in the
        // official readers; `EnumDescriptor::values` is not in declaration order.
        let mut values: Vec<(i32, Box<str>)> = desc
            .enum_descriptor_proto()
            .value
            .iter()
            .map(|v| (v.number(), v.name().into()))
            .collect();
        // Stable: declaration order is kept among equal numbers.
        values.sort_by_key(|(n, _)| *n);
        values.dedup_by_key(|(n, _)| *n);
        let min = values.first().map_or(0, |(n, _)| *n);
        let max = values.last().map_or(0, |(n, _)| *n);
        let span = i64::from(max) - i64::from(min) + 1;
        if span <= 4 * values.len() as i64 + 16 {
            let mut dense = vec![None; span as usize];
            for (n, name) in values {
                dense[(i64::from(n) - i64::from(min)) as usize] = Some(name);
            }
            Self {
                min,
                dense,
                sparse: Vec::new(),
            }
        } else {
            Self {
                min,
                dense: Vec::new(),
                sparse: values,
            }
        }
    }

    /// The name of `number`, if the enum defines it.
    #[inline]
    pub(super) fn name(&self, number: i32) -> Option<&str> {
        if !self.dense.is_empty() {
            let i = i64::from(number) - i64::from(self.min);
            return match usize::try_from(i).ok().and_then(|i| self.dense.get(i)) {
                Some(Some(name)) => Some(name),
                _ => None,
            };
        }
        self.sparse
            .binary_search_by_key(&number, |(n, _)| *n)
            .ok()
            .map(|k| &*self.sparse[k].1)
    }
}

/// Builds plans, sharing enum tables and bounding the size.
pub(super) struct Compiler {
    enums: HashMap<String, Arc<EnumPlan>>,
    /// Full names of the messages being expanded (root first).
    stack: Vec<String>,
    fields: usize,
}

impl Compiler {
    /// A compiler with nothing compiled yet.
    pub(super) fn new() -> Self {
        Self {
            enums: HashMap::new(),
            stack: Vec::new(),
            fields: 0,
        }
    }

    /// The plan and Arrow fields of message `desc`.
    pub(super) fn message(
        &mut self,
        desc: &MessageDescriptor,
    ) -> Result<(MessagePlan, Fields), DecodeError> {
        self.stack.push(desc.full_name().to_string());
        let result = self.message_fields(desc);
        self.stack.pop();
        result
    }

    fn message_fields(
        &mut self,
        desc: &MessageDescriptor,
    ) -> Result<(MessagePlan, Fields), DecodeError> {
        // Declaration order: `MessageDescriptor::fields` iterates by number.
        let descriptors: Vec<FieldDescriptor> = desc
            .descriptor_proto()
            .field
            .iter()
            .filter_map(|f| desc.get_field(f.number.and_then(|n| u32::try_from(n).ok())?))
            .collect();
        self.fields += descriptors.len();
        if self.fields > MAX_PLAN_FIELDS {
            return Err(DecodeError::new(format!(
                "protobuf schema {}: the decoded type would have more than {MAX_PLAN_FIELDS} fields",
                self.stack.first().map_or("", String::as_str)
            )));
        }
        let map_entry = is_map_entry(desc);
        let mut plans = Vec::with_capacity(descriptors.len());
        let mut arrow = Vec::with_capacity(descriptors.len());
        for f in &descriptors {
            let (plan, data_type) = self
                .field(f, map_entry)
                .map_err(|e| e.context(format_args!("{}.{}", desc.full_name(), f.name())))?;
            let arrow_field = if map_entry && f.number() == 1 {
                Field::new("keys", data_type, false)
            } else if map_entry {
                field("values", data_type)
            } else {
                field(f.name(), data_type)
            };
            arrow.push(arrow_field);
            plans.push(plan);
        }
        // Oneof siblings, by index.
        for (i, f) in descriptors.iter().enumerate() {
            if let Some(oneof) = f.containing_oneof() {
                let siblings: Vec<usize> = oneof
                    .fields()
                    .filter(|s| s.number() != f.number())
                    .filter_map(|s| descriptors.iter().position(|d| d.number() == s.number()))
                    .collect();
                plans[i].oneof_siblings = siblings.into();
            }
        }
        let max = plans.iter().map(|p| p.number).max().unwrap_or(0);
        let lookup = if max <= DENSE_LOOKUP_LIMIT {
            let mut table = vec![u32::MAX; max as usize + 1];
            for (i, p) in plans.iter().enumerate() {
                table[p.number as usize] = i as u32;
            }
            Lookup::Dense(table)
        } else {
            let mut pairs: Vec<(u32, u32)> = plans
                .iter()
                .enumerate()
                .map(|(i, p)| (p.number, i as u32))
                .collect();
            pairs.sort_unstable();
            Lookup::Sparse(pairs)
        };
        Ok((
            MessagePlan {
                full_name: desc.full_name().into(),
                fields: plans,
                lookup,
            },
            Fields::from(arrow),
        ))
    }

    fn field(
        &mut self,
        f: &FieldDescriptor,
        in_map_entry: bool,
    ) -> Result<(FieldPlan, DataType), DecodeError> {
        let repeated = f.cardinality() == Cardinality::Repeated;
        let strict = f.parent_file().syntax() == Syntax::Proto3;
        let mut enum_default: Box<str> = "".into();
        let (kind, data_type) = match f.kind() {
            PbKind::Double => (Kind::Double, DataType::Float64),
            PbKind::Float => (Kind::Float, DataType::Float32),
            PbKind::Int32 => (Kind::Int32, DataType::Int32),
            PbKind::Int64 => (Kind::Int64, DataType::Int64),
            PbKind::Uint32 => (Kind::UInt32, DataType::UInt32),
            PbKind::Uint64 => (Kind::UInt64, DataType::UInt64),
            PbKind::Sint32 => (Kind::SInt32, DataType::Int32),
            PbKind::Sint64 => (Kind::SInt64, DataType::Int64),
            PbKind::Fixed32 => (Kind::Fixed32, DataType::UInt32),
            PbKind::Fixed64 => (Kind::Fixed64, DataType::UInt64),
            PbKind::Sfixed32 => (Kind::SFixed32, DataType::Int32),
            PbKind::Sfixed64 => (Kind::SFixed64, DataType::Int64),
            PbKind::Bool => (Kind::Bool, DataType::Boolean),
            PbKind::String => (Kind::String { strict }, DataType::Utf8),
            PbKind::Bytes => (Kind::Bytes, DataType::Binary),
            PbKind::Enum(e) => {
                let plan = self.enum_plan(&e);
                if let Value::EnumNumber(n) = f.default_value() {
                    enum_default = match plan.name(n) {
                        Some(name) => name.into(),
                        None => n.to_string().into(),
                    };
                }
                (Kind::Enum(plan), DataType::Utf8)
            }
            PbKind::Message(m) => self.message_kind(&m)?,
        };
        let data_type = match (&kind, repeated) {
            (Kind::Message(_), true) if matches!(f.kind(), PbKind::Message(m) if is_map_entry(&m)) =>
            {
                let DataType::Struct(fields) = &data_type else {
                    return Err(DecodeError::new("map entry is not a struct"));
                };
                let key = fields.first().map(|k| k.data_type().clone());
                let value = fields.get(1).map(|v| v.data_type().clone());
                match (key, value) {
                    (Some(k), Some(v)) => map_of(k, v),
                    _ => return Err(DecodeError::new("map entry without key and value")),
                }
            }
            (_, true) => list_of(data_type),
            (_, false) => data_type,
        };
        Ok((
            FieldPlan {
                name: f.name().into(),
                number: f.number(),
                shape: if repeated {
                    Shape::Repeated
                } else {
                    Shape::Single
                },
                presence: !repeated && !in_map_entry && f.supports_presence(),
                group: f.is_group(),
                kind,
                oneof_siblings: Box::new([]),
                enum_default,
            },
            data_type,
        ))
    }

    fn message_kind(&mut self, m: &MessageDescriptor) -> Result<(Kind, DataType), DecodeError> {
        Ok(match m.full_name() {
            "google.protobuf.Timestamp" => (Kind::Timestamp, timestamp_type()),
            "google.protobuf.Duration" => (Kind::Duration, duration_type()),
            name if self.stack.len() >= MAX_DEPTH || self.stack.iter().any(|s| s == name) => {
                (Kind::Cut, DataType::Binary)
            }
            _ => {
                let (plan, fields) = self.message(m)?;
                (Kind::Message(Box::new(plan)), DataType::Struct(fields))
            }
        })
    }

    fn enum_plan(&mut self, e: &EnumDescriptor) -> Arc<EnumPlan> {
        self.enums
            .entry(e.full_name().to_string())
            .or_insert_with(|| Arc::new(EnumPlan::new(e)))
            .clone()
    }
}

/// Whether `desc` decodes as a map entry (its repeated fields as an Arrow
/// `Map`): flagged `map_entry` *and* shaped like one, exactly a singular key
/// (field 1) that is not a message and a singular value (field 2). A
/// descriptor set can flag any message (prost-reflect does not check the
/// shape; found by fuzzing: a root message flagged `map_entry` whose field 1
/// was a message gave a null in the non-nullable `keys` column). A message
/// flagged but not so shaped decodes as an ordinary message.
fn is_map_entry(desc: &MessageDescriptor) -> bool {
    if !desc.is_map_entry() {
        return false;
    }
    let mut fields = desc.fields();
    let (Some(key), Some(value), None) = (fields.next(), fields.next(), fields.next()) else {
        return false;
    };
    let singular = |f: &FieldDescriptor| f.cardinality() != Cardinality::Repeated;
    key.number() == 1
        && value.number() == 2
        && singular(&key)
        && singular(&value)
        && !matches!(key.kind(), PbKind::Message(_))
}
