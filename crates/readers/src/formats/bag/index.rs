//! What a bag [`Summary`](crate::model::Summary) remembers for reading chunks,
//! and turning connection records into [`model::Channel`]s.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::records::ConnectionData;
use crate::model;

/// Reader-private bag data stored in [`Summary::private`](crate::model::Summary::private).
///
/// Obtain it with `summary.private::<BagIndex>()`.
#[derive(Debug, Clone, Default)]
pub struct BagIndex {
    /// One entry per [`Summary::chunks`](crate::model::Summary::chunks) entry, same order.
    pub chunks: Vec<ChunkDetail>,
}

/// Reader-private facts about one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkDetail {
    /// End (exclusive) of the file range after the chunk record where its
    /// index-data records may lie: the next chunk, the index section, or the
    /// end of the run of index-data records a walk found.
    pub(crate) index_end: u64,
}

/// Turns a connection record into a channel.
///
/// `topic` is the record-header topic (the one messages are stored under);
/// `md5sum`, `callerid`, `latching` and any other data field go into the
/// metadata (the data's own `topic` only when it differs).
pub(crate) fn connection_channel(id: u32, topic: &str, data: &ConnectionData) -> model::Channel {
    let mut metadata = BTreeMap::new();
    if let Some(md5) = &data.md5sum {
        metadata.insert("md5sum".to_string(), md5.clone());
    }
    for (k, v) in &data.others {
        if k == "topic" && v == topic {
            continue;
        }
        metadata.insert(k.clone(), v.clone());
    }
    model::Channel {
        id: u64::from(id),
        topic: topic.to_string(),
        message_type: data.msg_type.clone(),
        message_encoding: "ros1".to_string(),
        schema_encoding: Some("ros1msg".to_string()),
        schema: Some(Arc::from(&data.message_definition[..])),
        metadata,
    }
}

/// The stand-in for a connection id that messages use but no connection record
/// defines: empty topic, `ros1` encoding, no type or schema.
pub(crate) fn synthetic_channel(id: u32) -> model::Channel {
    model::Channel {
        id: u64::from(id),
        topic: String::new(),
        message_type: None,
        message_encoding: "ros1".to_string(),
        schema_encoding: None,
        schema: None,
        metadata: BTreeMap::new(),
    }
}
