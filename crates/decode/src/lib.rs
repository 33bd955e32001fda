//! # logsql-decode
//!
//! Decoded messages: payload fields as typed, nested Arrow columns.
//!
//! This crate owns turning a message payload into one row of Arrow columns,
//! driven only by the schema stored in the log file (never by types installed
//! on the machine). It is free of DataFusion: the engine's `read_topic` table
//! function and the CLI's `export --decode` sit on top of it.
//!
//! - [`MessageDecoder`]: one compiled decoder per schema; its
//!   [`data_type`](MessageDecoder::data_type) is a `Struct` of the message's
//!   fields and [`decode`](MessageDecoder::decode) appends one payload as one
//!   row of a [`ColumnBuilder`].
//! - [`ColumnBuilder`]: the one truncatable column builder all decoders share,
//!   so a payload that fails half-way is rolled back ([`append_message`]).
//! - [`decoder_of`]: the one dispatcher, for every format: turns what a
//!   format says of a channel's schema ([`ChannelSchema`], from
//!   `FormatReader::schema_of`) into a decoder; [`decoder_for`] picks one
//!   from a channel's own schema bytes and encodings.
//!
//! Type mapping shared by every decoder: nested messages are `Struct`,
//! variable-length arrays `List`, fixed-length arrays `FixedSizeList`,
//! byte arrays (`bytes`, ROS `uint8[]`/`uint8[N]`) `Binary`, enums their name
//! as `Utf8` (the number as text when the enum does not define it), absolute
//! times [`timestamp_type`] and durations [`duration_type`]. Every field is
//! nullable (missing fields in merged schemas and null rows need it); map keys
//! are the only non-nullable fields.
//!
//! [`descriptors`] loads user-supplied protobuf schemas (descriptor sets) for
//! formats that name a payload's type without storing its schema.

#![warn(missing_docs)]

pub mod builder;
pub mod cdr;
pub mod descriptors;
pub mod json;
pub mod merge;
pub mod protobuf;
pub mod ros1msg;

use std::fmt;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};

pub use builder::ColumnBuilder;

use logsql_readers::model::{Channel, ChannelSchema};

/// Why a schema could not be compiled or a payload could not be decoded.
///
/// Carries only a message: the caller knows the file, topic and offset and
/// adds them when it turns this into a [`logsql_readers::Error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    /// What was wrong (e.g. `field "x": payload ends at byte 12, 8 more needed`).
    pub message: Box<str>,
}

impl DecodeError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into().into_boxed_str(),
        }
    }

    /// The same error with `context` (a field path, a type name) in front.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Self::new(format!("{context}: {}", self.message))
    }
}

/// A decoder compiled from one schema.
pub trait MessageDecoder: Send + Sync + fmt::Debug {
    /// Arrow type of one decoded message: a `DataType::Struct` of its fields.
    fn data_type(&self) -> &DataType;

    /// Decodes `payload` and appends it as one row of `out`, a builder made
    /// from [`Self::data_type`]. On error `out` may hold a partial row; use
    /// [`append_message`], which rolls it back.
    fn decode(&self, payload: &[u8], out: &mut ColumnBuilder) -> Result<(), DecodeError>;

    /// A short description of the schema (`ros1msg sensor_msgs/Imu`), used in
    /// errors that name two conflicting definitions.
    fn describe(&self) -> String;

    /// A self-contained schema that rebuilds this decoder exactly where its
    /// channel's own schema cannot (a distributed worker reading a JSON topic
    /// typed from sample payloads): see [`json::from_portable_schema`]. `None`
    /// (the default): the decoder is rebuilt from the channel's schema.
    fn portable_schema(&self) -> Option<Vec<u8>> {
        None
    }
}

/// Decodes `payload` as one new row of `out`; on error the partial row is
/// removed, so `out` has exactly the rows it had before.
pub fn append_message(
    decoder: &dyn MessageDecoder,
    payload: &[u8],
    out: &mut ColumnBuilder,
) -> Result<(), DecodeError> {
    let len = out.len();
    let result = decoder.decode(payload, out);
    if result.is_err() {
        out.truncate(len);
    }
    result
}

/// The Arrow type of absolute times (ROS `time`, `builtin_interfaces/Time`,
/// `google.protobuf.Timestamp`): nanoseconds since the Unix epoch, UTC.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

/// The Arrow type of durations (ROS `duration`, `builtin_interfaces/Duration`,
/// `google.protobuf.Duration`): nanoseconds.
pub fn duration_type() -> DataType {
    DataType::Duration(TimeUnit::Nanosecond)
}

/// A nullable field, the shape of every decoded field.
pub fn field(name: impl Into<String>, data_type: DataType) -> Field {
    Field::new(name, data_type, true)
}

/// `List` of nullable `item`s.
pub fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(field("item", item)))
}

/// `FixedSizeList` of `size` nullable `item`s.
pub fn fixed_list_of(item: DataType, size: i32) -> DataType {
    DataType::FixedSizeList(Arc::new(field("item", item)), size)
}

/// `Map` from non-nullable `key` to nullable `value` (entries named as
/// arrow-rs names them: `entries`, `keys`, `values`).
pub(crate) fn map_of(key: DataType, value: DataType) -> DataType {
    let entries = Fields::from(vec![
        Field::new("keys", key, false),
        Field::new("values", value, true),
    ]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

/// Compiles the decoder of `channel`'s payloads from `schema`, the format's
/// description of it ([`logsql_readers::formats::FormatReader::schema_of`]): the one
/// dispatcher `read_topic` uses for every format.
///
/// | description | decoder |
/// |---|---|
/// | [`ChannelSchema::Stored`] | from the channel's own encodings and schema ([`decoder_for`]) |
/// | [`ChannelSchema::Protobuf`] | protobuf of that message type ([`protobuf::from_descriptor`]) |
/// | [`ChannelSchema::Unavailable`] | none: an error with the format's reason |
pub fn decoder_of(
    channel: &Channel,
    schema: &ChannelSchema,
) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    match schema {
        ChannelSchema::Stored => decoder_for(channel),
        ChannelSchema::Protobuf(message) => protobuf::from_descriptor(message.clone()),
        ChannelSchema::Unavailable(why) => Err(DecodeError::new(why.as_str())),
    }
}

/// Compiles the decoder for `channel` from its schema and encodings.
///
/// | message encoding | schema encoding | decoder |
/// |---|---|---|
/// | `ros1` | `ros1msg` | ROS1 message definitions |
/// | `cdr` | `ros2msg` | ROS 2 message definitions, CDR payloads |
/// | `protobuf` | `protobuf` (a `FileDescriptorSet`) | protobuf via prost-reflect |
/// | `json` | `jsonschema` or none | JSON |
///
/// Anything else is an error naming the encodings.
pub fn decoder_for(channel: &Channel) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    let schema = channel.schema.as_deref().unwrap_or(&[]);
    let schema_encoding = channel.schema_encoding.as_deref().unwrap_or("");
    let type_name = channel.message_type.as_deref().unwrap_or("");
    let unsupported = || {
        DecodeError::new(format!(
            "cannot decode message encoding {:?} with schema encoding {:?} (type {:?})",
            channel.message_encoding, schema_encoding, type_name
        ))
    };
    match (channel.message_encoding.as_str(), schema_encoding) {
        // An empty definition is a message without fields (std_msgs/Empty).
        ("ros1", "ros1msg") => ros1msg::decoder(channel),
        ("cdr", "ros2msg") => cdr::decoder(channel),
        ("protobuf", "protobuf") if !schema.is_empty() => protobuf::decoder(channel),
        ("json", "jsonschema" | "") => json::decoder(channel),
        _ => Err(unsupported()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::DescriptorPool;
    use prost_reflect::prost_types::{
        DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet,
        field_descriptor_proto::{Label, Type},
    };

    fn ros1_channel() -> Channel {
        Channel {
            id: 1,
            topic: "/t".into(),
            message_type: Some("pkg/M".into()),
            message_encoding: "ros1".into(),
            schema_encoding: Some("ros1msg".into()),
            schema: Some(Arc::from(&b"int32 x\n"[..])),
            metadata: Default::default(),
        }
    }

    #[test]
    fn decoder_of_serves_every_description() {
        let ch = ros1_channel();
        // Stored: the channel's own schema, as decoder_for reads it.
        let d = decoder_of(&ch, &ChannelSchema::Stored).unwrap();
        assert_eq!(d.describe(), "ros1msg pkg/M");
        assert_eq!(d.data_type(), decoder_for(&ch).unwrap().data_type());
        // Protobuf: a message type the format resolved itself.
        let file = FileDescriptorProto {
            name: Some("m.proto".into()),
            package: Some("pkg".into()),
            message_type: vec![DescriptorProto {
                name: Some("P".into()),
                field: vec![FieldDescriptorProto {
                    name: Some("y".into()),
                    number: Some(1),
                    label: Some(Label::Optional as i32),
                    r#type: Some(Type::Double as i32),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let pool = DescriptorPool::from_file_descriptor_set(FileDescriptorSet { file: vec![file] })
            .unwrap();
        let message = pool.get_message_by_name("pkg.P").unwrap();
        let d = decoder_of(&ch, &ChannelSchema::Protobuf(message)).unwrap();
        assert_eq!(d.describe(), "protobuf pkg.P");
        assert_eq!(
            d.data_type(),
            &DataType::Struct(Fields::from(vec![field("y", DataType::Float64)]))
        );
        // Unavailable: the format's reason, word for word.
        let e = decoder_of(
            &ch,
            &ChannelSchema::Unavailable("no schema: use x()".into()),
        );
        assert_eq!(e.unwrap_err().to_string(), "no schema: use x()");
    }
}
