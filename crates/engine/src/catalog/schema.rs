//! The catalog's tables and their columns. Every table starts with
//! `location`, the recording's path or URL as a scan's `file` column gives it,
//! so rows of one recording are found (and replaced) by it alone.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};

use crate::scanner::schema::{map_field, timestamp_type};

/// One of the catalog's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CatalogTable {
    /// One row per recording.
    Recordings,
    /// One row per recording and topic.
    Topics,
    /// One row per recording and chunk: the recording's chunk index.
    Chunks,
}

impl CatalogTable {
    /// Every table, in the order a generation writes them.
    pub const ALL: [CatalogTable; 3] = [Self::Recordings, Self::Topics, Self::Chunks];

    /// The table's name (and its file's stem).
    pub fn name(self) -> &'static str {
        match self {
            Self::Recordings => "recordings",
            Self::Topics => "topics",
            Self::Chunks => "chunks",
        }
    }

    /// The table's columns.
    pub fn schema(self) -> SchemaRef {
        match self {
            Self::Recordings => Arc::clone(&RECORDINGS),
            Self::Topics => Arc::clone(&TOPICS),
            Self::Chunks => Arc::clone(&CHUNKS),
        }
    }
}

/// UTC nanosecond timestamps, as the `messages` table's times.
fn time(name: &str, nullable: bool) -> Field {
    Field::new(name, timestamp_type(), nullable)
}

/// The fields of one attachment in `recordings.attachments`.
pub(crate) fn attachment_fields() -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("media_type", DataType::Utf8, false),
        Field::new("size", DataType::UInt64, false),
    ])
}

static RECORDINGS: LazyLock<SchemaRef> = LazyLock::new(|| {
    let s = |n: &str| Field::new(n, DataType::Utf8, false);
    let so = |n: &str| Field::new(n, DataType::Utf8, true);
    let u = |n: &str| Field::new(n, DataType::UInt64, true);
    Arc::new(Schema::new(vec![
        s("location"),
        // The SOURCE of `logsql index` that found it, as an absolute URL.
        s("source"),
        so("format"),
        Field::new("size", DataType::UInt64, false),
        time("modified", false),
        so("etag"),
        time("start_time", true),
        time("end_time", true),
        // Seconds from the first message to the last.
        Field::new("duration", DataType::Float64, true),
        u("message_count"),
        u("topic_count"),
        u("chunk_count"),
        map_field("partitions"),
        so("device"),
        map_field("metadata"),
        Field::new(
            "attachments",
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(attachment_fields()),
                true,
            ))),
            false,
        ),
        // indexed, unindexed, damaged or unreadable.
        s("health"),
        so("health_reason"),
        time("indexed_at", false),
    ]))
});

static TOPICS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("location", DataType::Utf8, false),
        Field::new("topic", DataType::Utf8, false),
        Field::new("message_type", DataType::Utf8, true),
        Field::new("message_encoding", DataType::Utf8, false),
        // sha1 of the schema bytes the recording stores, hex.
        Field::new("schema_hash", DataType::Utf8, true),
        Field::new("message_count", DataType::UInt64, false),
        time("start_time", true),
        time("end_time", true),
        // Messages per second between the first and the last.
        Field::new("rate", DataType::Float64, true),
        // The longest time between two consecutive messages, in seconds.
        Field::new("largest_gap", DataType::Float64, true),
        // Compressed bytes of the chunks holding the topic.
        Field::new("bytes", DataType::UInt64, true),
    ]))
});

static CHUNKS: LazyLock<SchemaRef> = LazyLock::new(|| {
    let u = |n: &str, null| Field::new(n, DataType::UInt64, null);
    Arc::new(Schema::new(vec![
        Field::new("location", DataType::Utf8, false),
        u("chunk_index", false),
        u("offset", false),
        u("compressed_size", false),
        u("uncompressed_size", true),
        time("start_time", true),
        time("end_time", true),
        u("message_count", true),
        Field::new(
            "topics",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            true,
        ),
    ]))
});
