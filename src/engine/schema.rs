//! The `messages` table schema, the same for every format.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// Column names of the `messages` table, in schema order.
pub mod col {
    /// Topic name (Utf8).
    pub const TOPIC: &str = "topic";
    /// Log time, `Timestamp(Nanosecond, "UTC")`.
    pub const LOG_TIME: &str = "log_time";
    /// Publish time, same type, null where the format lacks it.
    pub const PUBLISH_TIME: &str = "publish_time";
    /// Sequence number (UInt32, nullable).
    pub const SEQUENCE: &str = "sequence";
    /// Message type / schema name (Utf8, nullable).
    pub const MESSAGE_TYPE: &str = "message_type";
    /// Payload encoding (Utf8).
    pub const MESSAGE_ENCODING: &str = "message_encoding";
    /// Raw payload (Binary).
    pub const DATA: &str = "data";
    /// The file the row came from (Utf8).
    pub const FILE: &str = "file";
}

/// The Arrow type of every time column: nanoseconds, UTC.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

static MESSAGES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new(col::TOPIC, DataType::Utf8, false),
        Field::new(col::LOG_TIME, timestamp_type(), false),
        Field::new(col::PUBLISH_TIME, timestamp_type(), true),
        Field::new(col::SEQUENCE, DataType::UInt32, true),
        Field::new(col::MESSAGE_TYPE, DataType::Utf8, true),
        Field::new(col::MESSAGE_ENCODING, DataType::Utf8, false),
        Field::new(col::DATA, DataType::Binary, false),
        Field::new(col::FILE, DataType::Utf8, false),
    ]))
});

/// The schema of the `messages` table of every format.
pub fn messages_schema() -> SchemaRef {
    Arc::clone(&MESSAGES)
}
