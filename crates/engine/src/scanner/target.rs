//! What a scan reads: the `messages` table, a typed side table of a format
//! (`positions('town.log')`), or one topic's decoded messages
//! (`read_topic('run.mcap', '/imu')`).
//!
//! A leaf of the engine: the scan, the file source, the file format and the
//! distributed codec all take a `ScanTarget`; the table functions that build
//! the specs sit above them.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use prost_reflect::DescriptorPool;

use logsql_decode::{MessageDecoder, merge};
use logsql_readers::formats::{FormatReader, TypedTable};
use logsql_readers::model::Channel;
use logsql_readers::table::TableDef;

/// What one scan reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum ScanTarget {
    /// The `messages` table of every log format.
    #[default]
    Messages,
    /// A typed table a format derives from its records.
    Table(Arc<TableSpec>),
    /// One topic's messages decoded into typed columns (`read_topic`).
    Decoded(Arc<DecodedSpec>),
}

impl ScanTarget {
    /// The typed table read, if any.
    pub(crate) fn table(&self) -> Option<&Arc<TableSpec>> {
        match self {
            Self::Table(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the target is the `messages` table.
    pub(crate) fn is_messages(&self) -> bool {
        matches!(self, Self::Messages)
    }
}

/// Column with the decode error of a message that failed to decode
/// (`logsql.decode_errors = 'null'` only).
pub(crate) const ERROR_COLUMN: &str = "_error";
/// Column with the raw payload of a message that failed to decode
/// (`logsql.decode_errors = 'null'` only).
pub(crate) const RAW_COLUMN: &str = "_raw";

/// A typed table as scanned: the format's table, its argument and its
/// definition for the files at hand.
#[derive(Debug, Clone)]
pub struct TableSpec {
    /// The table, from the format's [`FormatReader::tables`].
    pub table: &'static dyn TypedTable,
    /// The table function's second argument, if any.
    pub arg: Option<String>,
    /// Columns and kind of the table.
    pub def: TableDef,
}

impl TableSpec {
    /// The table's name (the table function's name).
    pub fn name(&self) -> &'static str {
        self.table.name()
    }
}

impl PartialEq for TableSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && self.arg == other.arg && self.def == other.def
    }
}

/// A `read_topic` table as planned: the topic, its decoders and merged type.
#[derive(Debug)]
pub struct DecodedSpec {
    /// The topic read.
    pub topic: String,
    /// The merged Arrow type of one message (a `Struct`).
    pub message_type: DataType,
    /// Decoders compiled at planning, by (file cache key, channel id).
    pub decoders: HashMap<(String, u64), Arc<dyn MessageDecoder>>,
    /// Definitions planning attached to channels whose file stores none (a
    /// ROS 2 `.msg` from `logsql.msg_path` or the bundled interfaces), by
    /// (file cache key, channel id). Read where no planned decoder is at
    /// hand: on a distributed worker, which receives these but not the
    /// decoders, and has neither the coordinator's msg path nor its session.
    pub definitions: HashMap<(String, u64), PlannedDefinition>,
    /// Descriptor pool for protobuf channels named only by type (BDDF).
    pub pool: Option<Arc<DescriptorPool>>,
    /// Whether nested structs are flattened into dotted columns.
    pub flatten: bool,
    /// Whether a message that fails to decode becomes a null row (with
    /// `_error` and `_raw`) instead of failing the query.
    pub(crate) null_on_error: bool,
    /// The table schema.
    pub schema: SchemaRef,
}

impl PartialEq for DecodedSpec {
    fn eq(&self, other: &Self) -> bool {
        self.topic == other.topic && self.schema == other.schema
    }
}

impl DecodedSpec {
    /// The decoder for `channel` of the file with `cache_key`: the one
    /// compiled at planning, or one compiled now (on a distributed worker;
    /// channels found only while reading, e.g. in a recovery scan), with the
    /// definition planning attached to the channel, if any.
    pub fn decoder_for(
        &self,
        format: &dyn FormatReader,
        cache_key: &str,
        channel: &Channel,
    ) -> std::result::Result<Arc<dyn MessageDecoder>, logsql_decode::DecodeError> {
        if let Some(d) = self.decoders.get(&(cache_key.to_string(), channel.id)) {
            return Ok(Arc::clone(d));
        }
        let mut channel = with_pool_schema(channel, self.pool.as_deref());
        if let Some(def) = self.definitions.get(&(cache_key.to_string(), channel.id)) {
            def.apply(&mut channel);
        }
        let decoder = logsql_decode::decoder_of(&channel, &format.schema_of(&channel))?;
        merge::merge_types(&self.message_type, decoder.data_type())
            .ok()
            .filter(|m| m == &self.message_type)
            .ok_or_else(|| {
                logsql_decode::DecodeError::new(format!(
                    "channel {:?} ({}) does not fit the table's schema planned from the other files",
                    channel.topic,
                    decoder.describe()
                ))
            })?;
        Ok(decoder)
    }
}

/// A message definition attached to a channel at planning, where the file
/// stores none (`logsql_readers::ros2_interfaces::with_definition`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedDefinition {
    /// The schema encoding (`ros2msg`).
    pub encoding: String,
    /// The definition's bytes.
    pub schema: Arc<[u8]>,
}

impl PlannedDefinition {
    /// What planning attached to `before` to make `after`: `None` when the
    /// schema is the same (the file's own, or none).
    pub fn attached(before: &Channel, after: &Channel) -> Option<Self> {
        let schema = after.schema.as_ref()?;
        if before.schema.as_ref() == Some(schema) {
            return None;
        }
        Some(Self {
            encoding: after.schema_encoding.clone().unwrap_or_default(),
            schema: Arc::clone(schema),
        })
    }

    /// Makes this definition `channel`'s schema.
    pub fn apply(&self, channel: &mut Channel) {
        channel.schema_encoding = Some(self.encoding.clone());
        channel.schema = Some(Arc::clone(&self.schema));
    }
}

/// `channel` with its schema from `pool` when the file names the type only.
pub(crate) fn with_pool_schema(channel: &Channel, pool: Option<&DescriptorPool>) -> Channel {
    let mut ch = channel.clone();
    if let Some(pool) = pool {
        logsql_decode::descriptors::attach(pool, std::slice::from_mut(&mut ch));
    }
    ch
}
