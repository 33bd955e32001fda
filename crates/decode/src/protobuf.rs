//! Decoding of Protobuf payloads into typed Arrow columns, from a
//! `FileDescriptorSet` (MCAP `protobuf` schemas, BDDF channels with a user
//! descriptor set) or a prost-reflect [`MessageDescriptor`] (Apollo's
//! `proto_desc`).
//!
//! # Types
//!
//! | protobuf | Arrow |
//! |---|---|
//! | `int32`, `sint32`, `sfixed32` | Int32 |
//! | `int64`, `sint64`, `sfixed64` | Int64 |
//! | `uint32`, `fixed32` | UInt32 |
//! | `uint64`, `fixed64` | UInt64 |
//! | `float`, `double`, `bool` | Float32, Float64, Boolean |
//! | `string`, `bytes` | Utf8, Binary |
//! | enum | Utf8: the value's name, or the number as decimal text (`"7"`) when the enum does not define it |
//! | message (also groups) | Struct of its fields, in declaration order, named as in the `.proto` |
//! | `repeated T` | List of T |
//! | `map<K, V>` | `map_of``(K, V)` |
//! | `google.protobuf.Timestamp` | [`timestamp_type`](super::timestamp_type): `seconds * 1e9 + nanos` |
//! | `google.protobuf.Duration` | [`duration_type`](super::duration_type): `seconds * 1e9 + nanos` |
//! | a message type that would recurse | Binary: that sub-message's encoded bytes |
//!
//! **Recursion** is cut where a field's message type is already being expanded
//! on the path from the root: that field (each element, for repeated fields
//! and map values) becomes `Binary` holding the sub-message's encoded bytes,
//! which can be decoded again with a decoder of that type. For example in
//! `google.protobuf.Struct`, `fields` is a map of `Value` structs whose
//! `struct_value` is Binary and whose `list_value.values` is a List of Binary.
//! Nesting deeper than 64 messages is cut the same way. Timestamps and
//! durations beyond the range of i64 nanoseconds (±292 years) are null.
//!
//! **Presence**: fields that track presence (message-typed fields, oneof
//! members, proto3 `optional`, every proto2 `optional`/`required` field) are
//! null when the payload does not contain them; the other fields carry their
//! default (0, "", false, empty bytes, the enum's default name) when not
//! encoded. Oneof members are ordinary nullable fields, at most one of them
//! non-null. Map keys and values always carry a value (a missing map value
//! message is the empty message, as protobuf readers return it). Duplicate
//! map keys are kept in wire order (readers that build a dictionary keep the
//! last one, as protobuf does).
//!
//! # Decoding
//!
//! No `DynamicMessage`: the descriptor is compiled once into a plan (field
//! number → column), and a wire-format walker appends each value straight to
//! its column. It handles packed and unpacked repeated fields,
//! last-one-wins scalars, oneofs, merged repeated occurrences of a singular
//! message field, groups (decoded when declared, skipped when unknown) and
//! unknown fields (skipped). Every read is bounds-checked, no allocation is
//! sized from a length in the payload, and errors name the field path, e.g.
//! `protobuf foxglove.PoseInFrame: field "pose.position.x": payload ends at byte
//! 12 inside a fixed64 (8 more bytes needed)` (byte offsets count from the
//! start of the innermost message). proto3 strings must be valid UTF-8;
//! invalid sequences in proto2 strings become U+FFFD.
//!
//! Where protobuf readers differ, this follows upb / protobuf C++ (the
//! official Python reader): a known field met with another wire type is
//! skipped as an unknown field (prost refuses it); an enum number with
//! several names (`allow_alias`) gives the first name declared. One deliberate
//! difference: an undefined number of a proto2 (closed) enum is kept as its
//! text (`"7"`), where upb moves it to the unknown fields and leaves the field
//! unset.

mod plan;
mod walk;
mod wire;

use std::collections::HashSet;
use std::sync::Arc;

use arrow_schema::DataType;
use prost::Message as _;
use prost_reflect::prost_types::FileDescriptorSet;
use prost_reflect::{DescriptorPool, MessageDescriptor};

use super::{ColumnBuilder, DecodeError, MessageDecoder};
use logsql_readers::model::Channel;
/// The syntax guard every descriptor-pool builder shares (see [`logsql_readers::proto_syntax`]).
pub use logsql_readers::proto_syntax::check_syntax;

/// The decoder for `channel`: its `schema` is an encoded
/// `google.protobuf.FileDescriptorSet` and its `message_type` the full name
/// of the message (a leading `.` is accepted).
pub fn decoder(channel: &Channel) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    let type_name = channel
        .message_type
        .as_deref()
        .unwrap_or("")
        .trim_start_matches('.');
    if type_name.is_empty() {
        return Err(DecodeError::new(format!(
            "protobuf channel {:?} has no message type name",
            channel.topic
        )));
    }
    let schema = channel.schema.as_deref().unwrap_or(&[]);
    let pool = pool_from_set(schema)
        .map_err(|e| DecodeError::new(format!("protobuf schema of {type_name}: {e}")))?;
    let message = pool.get_message_by_name(type_name).ok_or_else(|| {
        DecodeError::new(format!(
            "protobuf schema of {type_name}: the FileDescriptorSet does not define {type_name} \
             ({} files, {} message types)",
            pool.files().len(),
            pool.all_messages().len()
        ))
    })?;
    from_descriptor(message)
}

/// The decoder for message type `message` (for descriptor pools built by a
/// format, like Apollo's `proto_desc`).
pub fn from_descriptor(message: MessageDescriptor) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    Ok(Arc::new(ProtobufDecoder::new(&message)?))
}

/// A [`DescriptorPool`] from an encoded `FileDescriptorSet`. Files repeated
/// under the same name are taken once; file order does not matter.
fn pool_from_set(schema: &[u8]) -> Result<DescriptorPool, String> {
    if schema.is_empty() {
        return Err("the schema is empty (expected a FileDescriptorSet)".into());
    }
    let mut set =
        FileDescriptorSet::decode(schema).map_err(|e| format!("not a FileDescriptorSet ({e})"))?;
    if set.file.is_empty() {
        return Err("the FileDescriptorSet holds no file".into());
    }
    let mut seen = HashSet::new();
    set.file.retain(|f| seen.insert(f.name().to_string()));
    check_syntax(&mut set.file)?;
    DescriptorPool::from_file_descriptor_set(set)
        .map_err(|e| format!("the FileDescriptorSet does not resolve ({e})"))
}

/// A compiled protobuf decoder: the message's plan and Arrow type.
#[derive(Debug)]
pub struct ProtobufDecoder {
    root: plan::MessagePlan,
    data_type: DataType,
}

impl ProtobufDecoder {
    /// Compiles the decoder of message type `message`.
    pub fn new(message: &MessageDescriptor) -> Result<Self, DecodeError> {
        let (root, fields) = plan::Compiler::new().message(message)?;
        Ok(Self {
            root,
            data_type: DataType::Struct(fields),
        })
    }
}

impl MessageDecoder for ProtobufDecoder {
    fn data_type(&self) -> &DataType {
        &self.data_type
    }

    fn decode(&self, payload: &[u8], out: &mut ColumnBuilder) -> Result<(), DecodeError> {
        walk::message(&self.root, payload, out)
            .map_err(|e| DecodeError::new(format!("protobuf {}: {e}", self.root.full_name)))
    }

    fn describe(&self) -> String {
        format!("protobuf {}", self.root.full_name)
    }
}
