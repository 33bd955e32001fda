//! How a channel of any format is written to MCAP (the writer is the `mcap`
//! crate's, driven by the engine's `COPY ... TO 'x.mcap'` sink).
//!
//! | source | MCAP channel | MCAP schema |
//! |---|---|---|
//! | MCAP | as read: topic, message encoding, metadata | as read: name, encoding, data |
//! | ROS1 bag | `ros1` encoding; `md5sum`, `callerid`, `latching` and other connection fields as metadata | `ros1msg`, the full message definition |
//! | Apollo record | `protobuf` | `protobuf`: a `FileDescriptorSet` built from `proto_desc` |
//! | BDDF | `protobuf` or the series' content type | `protobuf` when the file or `logsql.descriptor_set` gives it |
//! | CARLA | `carla` (raw packet bytes), topic per packet kind | none |
//!
//! A channel without a schema but with a message type gets a schema record that
//! carries only the name (empty encoding and data: "no schema available" in the
//! MCAP spec), so the type survives the round trip; a channel with neither is
//! written with schema id 0.

use std::collections::BTreeMap;
use std::sync::Arc;

use prost::Message as _;

use crate::model::Channel;

/// An MCAP Schema record's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McapSchema {
    /// Schema name (the message type).
    pub name: String,
    /// Schema encoding (`ros1msg`, `protobuf`, ...); empty when only the name is known.
    pub encoding: String,
    /// Schema data (empty when the encoding is).
    pub data: Arc<[u8]>,
}

/// An MCAP Channel record's content (its schema by value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McapChannel {
    /// Topic.
    pub topic: String,
    /// Message encoding.
    pub message_encoding: String,
    /// The schema, if any.
    pub schema: Option<McapSchema>,
    /// Channel metadata.
    pub metadata: BTreeMap<String, String>,
}

/// The MCAP channel and schema for `channel`, a channel of a file of format
/// `format` (a [`crate::formats::FormatReader::name`]).
pub fn mcap_channel(format: &str, channel: &Channel) -> McapChannel {
    let schema = match (format, channel.message_type.as_deref()) {
        (crate::formats::apollo::FORMAT, Some(ty)) => Some(apollo_schema(channel, ty)),
        (_, Some(ty)) => Some(match (&channel.schema_encoding, &channel.schema) {
            (Some(enc), Some(data)) if !enc.is_empty() => McapSchema {
                name: ty.to_string(),
                encoding: enc.clone(),
                data: Arc::clone(data),
            },
            _ => named_only(ty),
        }),
        (_, None) => None,
    };
    McapChannel {
        topic: channel.topic.clone(),
        message_encoding: channel.message_encoding.clone(),
        schema,
        metadata: channel.metadata.clone(),
    }
}

/// A schema record naming `ty` without a schema.
pub fn named_only(ty: &str) -> McapSchema {
    McapSchema {
        name: ty.to_string(),
        encoding: String::new(),
        data: Arc::from(&[][..]),
    }
}

/// An Apollo channel's schema: its `proto_desc` (a `ProtoDesc` tree or a bare
/// `FileDescriptorProto`) as the `FileDescriptorSet` MCAP's `protobuf` schema
/// encoding expects (dependencies first); only the name when `proto_desc` is
/// missing or unusable.
fn apollo_schema(channel: &Channel, ty: &str) -> McapSchema {
    let files = channel
        .schema
        .as_deref()
        .and_then(|d| crate::formats::apollo::descriptor::descriptor_files(d, ty));
    match files {
        Some((_, file)) => McapSchema {
            name: ty.to_string(),
            encoding: "protobuf".to_string(),
            data: prost_reflect::prost_types::FileDescriptorSet { file }
                .encode_to_vec()
                .into(),
        },
        None => named_only(ty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chan(ty: Option<&str>, enc: Option<&str>, schema: Option<&[u8]>) -> Channel {
        Channel {
            id: 1,
            topic: "/t".into(),
            message_type: ty.map(str::to_string),
            message_encoding: "x".into(),
            schema_encoding: enc.map(str::to_string),
            schema: schema.map(Arc::from),
            metadata: BTreeMap::from([("k".to_string(), "v".to_string())]),
        }
    }

    #[test]
    fn schemas_are_kept_named_only_or_absent() {
        let c = mcap_channel(
            "bag",
            &chan(
                Some("std_msgs/String"),
                Some("ros1msg"),
                Some(b"string data"),
            ),
        );
        let s = c.schema.unwrap();
        assert_eq!(
            (s.name.as_str(), s.encoding.as_str(), &s.data[..]),
            ("std_msgs/String", "ros1msg", &b"string data"[..])
        );
        assert_eq!(c.metadata.get("k").map(String::as_str), Some("v"));
        let c = mcap_channel("carla", &chan(Some("carla.Frame"), None, None));
        assert_eq!(c.schema, Some(named_only("carla.Frame")));
        assert_eq!(mcap_channel("mcap", &chan(None, None, None)).schema, None);
    }

    #[test]
    fn apollo_proto_desc_becomes_a_descriptor_set() {
        use prost_reflect::prost_types::{DescriptorProto, FileDescriptorProto, FileDescriptorSet};
        let file = FileDescriptorProto {
            name: Some("a.proto".into()),
            package: Some("p".into()),
            message_type: vec![DescriptorProto {
                name: Some("M".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let c = mcap_channel(
            "record",
            &chan(Some("p.M"), Some("protobuf"), Some(&file.encode_to_vec())),
        );
        let s = c.schema.unwrap();
        assert_eq!(s.encoding, "protobuf");
        let set = FileDescriptorSet::decode(&s.data[..]).unwrap();
        assert_eq!(set.file, vec![file]);
        // Garbage descriptors keep only the name.
        let c = mcap_channel(
            "record",
            &chan(Some("p.M"), Some("protobuf"), Some(b"test")),
        );
        assert_eq!(c.schema, Some(named_only("p.M")));
    }
}
