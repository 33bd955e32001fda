//! What an MCAP [`Summary`](crate::model::Summary) remembers for reading chunks.
//!
//! [`McapIndex`] lives in [`Summary::private`](crate::model::Summary::private):
//! the schemas by id (to resolve Channel records met inside chunks) and, for each
//! entry of [`Summary::chunks`](crate::model::Summary::chunks), whether it is a
//! real Chunk record or a run of loose records, plus its message-index location
//! (for the header-only fast path). It also owns turning Schema/Channel records
//! into [`model::Channel`]s.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::records;
use crate::model;

/// Reader-private MCAP data stored in [`Summary::private`](crate::model::Summary::private).
///
/// Obtain it with `summary.private::<McapIndex>()`.
#[derive(Debug, Clone, Default)]
pub struct McapIndex {
    /// Every valid Schema record (id != 0) found, by id (first occurrence wins).
    pub schemas: BTreeMap<u16, SchemaInfo>,
    /// One entry per [`Summary::chunks`](crate::model::Summary::chunks) entry, same order.
    pub chunks: Vec<ChunkDetail>,
}

/// A Schema record, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaInfo {
    /// Schema id.
    pub id: u16,
    /// Name (message type).
    pub name: String,
    /// Encoding (`ros1msg`, `protobuf`, ...).
    pub encoding: String,
    /// Schema data.
    pub data: Arc<[u8]>,
}

impl SchemaInfo {
    /// Copies a parsed Schema record.
    pub(crate) fn from_record(s: &records::Schema<'_>) -> Self {
        Self {
            id: s.id,
            name: s.name.to_string(),
            encoding: s.encoding.to_string(),
            data: Arc::from(s.data),
        }
    }
}

/// What kind of byte range a chunk entry covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkKind {
    /// A Chunk record (possibly compressed).
    Chunk,
    /// A run of loose (unchunked) records holding messages: a pseudo-chunk.
    Loose,
}

/// Reader-private facts about one chunk entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkDetail {
    /// Chunk record or pseudo-chunk.
    pub kind: ChunkKind,
    /// `(channel id, file offset)` of the MessageIndex records after the chunk; empty when unknown.
    pub message_index_offsets: Vec<(u16, u64)>,
    /// Total bytes of those MessageIndex records (they start right after the chunk).
    pub message_index_length: u64,
}

impl ChunkDetail {
    /// A pseudo-chunk.
    pub fn loose() -> Self {
        Self {
            kind: ChunkKind::Loose,
            message_index_offsets: Vec::new(),
            message_index_length: 0,
        }
    }

    /// A real chunk with no known message index.
    pub fn chunk() -> Self {
        Self {
            kind: ChunkKind::Chunk,
            message_index_offsets: Vec::new(),
            message_index_length: 0,
        }
    }
}

/// A Channel record, owned, before its schema is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChannelDef {
    /// Channel id.
    pub id: u16,
    /// Schema id (0 = schemaless).
    pub schema_id: u16,
    /// Topic.
    pub topic: String,
    /// Message encoding.
    pub message_encoding: String,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
}

impl ChannelDef {
    /// Copies a parsed Channel record.
    pub(crate) fn from_record(c: &records::Channel<'_>) -> Self {
        Self {
            id: c.id,
            schema_id: c.schema_id,
            topic: c.topic.to_string(),
            message_encoding: c.message_encoding.to_string(),
            metadata: c.metadata.to_btree(),
        }
    }

    /// The model channel, with schema fields filled from `schema` (when schema_id is not 0).
    pub(crate) fn to_channel(&self, schema: Option<&SchemaInfo>) -> model::Channel {
        let schema = if self.schema_id == 0 { None } else { schema };
        model::Channel {
            id: u64::from(self.id),
            topic: self.topic.clone(),
            message_type: schema.map(|s| s.name.clone()),
            message_encoding: self.message_encoding.clone(),
            schema_encoding: schema.map(|s| s.encoding.clone()),
            schema: schema.map(|s| s.data.clone()),
            metadata: self.metadata.clone(),
        }
    }
}

/// The stand-in for a channel id that messages use but no Channel record defines:
/// empty topic and encoding, no schema.
pub(crate) fn synthetic_channel(id: u16) -> model::Channel {
    model::Channel {
        id: u64::from(id),
        topic: String::new(),
        message_type: None,
        message_encoding: String::new(),
        schema_encoding: None,
        schema: None,
        metadata: BTreeMap::new(),
    }
}
