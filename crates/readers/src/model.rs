//! Plain data shared by every format reader and the scan engine.
//!
//! All five formats look alike from far enough away: a file holds *channels*
//! (topic, type, encoding, schema) and a sequence of *chunks*, each with a byte
//! range, a time range and maybe the set of channels in it; a chunk yields
//! *messages*. A reader describes its file as a [`Summary`] and delivers the
//! messages of one [`ChunkMeta`] to a [`MessageReceiver`]; pruning, partitioning,
//! batching and metrics are the engine's job.

use std::any::Any;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use arrow_buffer::Buffer;

use crate::error::Error;

/// Nanoseconds since the epoch the file uses (the Unix epoch for nearly every recorder).
pub type Nanos = u64;

/// One channel (MCAP channel, ROS connection, Cyber channel, BDDF series, CARLA packet kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// The format's own key for the channel (MCAP channel id, bag connection id, ...).
    pub id: u64,
    /// Topic name. Several channels may share one topic.
    pub topic: String,
    /// Message type / schema name (e.g. `sensor_msgs/Imu`), `None` when schemaless.
    pub message_type: Option<String>,
    /// Encoding of the payload bytes (`ros1`, `cdr`, `protobuf`, `json`, ...).
    pub message_encoding: String,
    /// Encoding of [`Channel::schema`] (`ros1msg`, `protobuf`, `jsonschema`, ...).
    pub schema_encoding: Option<String>,
    /// The schema / message definition as stored in the file.
    pub schema: Option<Arc<[u8]>>,
    /// Free-form key/value metadata attached to the channel.
    pub metadata: BTreeMap<String, String>,
}

/// How a channel's payloads are described, for decoding them into typed
/// columns (`read_topic`): what a format says of a channel
/// ([`crate::formats::FormatReader::schema_of`]), without knowing any
/// decoder. The decode layer's one dispatcher (`logsql_decode::decoder_of`)
/// turns it into a decoder, whatever the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelSchema {
    /// The channel's own encodings and schema bytes
    /// ([`Channel::message_encoding`], [`Channel::schema_encoding`],
    /// [`Channel::schema`]), named as MCAP names them (`ros1`/`ros1msg`,
    /// `cdr`/`ros2msg`, `protobuf`/`protobuf` with a `FileDescriptorSet`,
    /// `json`/`jsonschema`). The default; also what a schema supplied at plan
    /// time (a descriptor set, `logsql.msg_path`) fills in.
    Stored,
    /// A protobuf message type in a descriptor pool the format built from its
    /// own schema records (Apollo's `proto_desc`: a chain of
    /// `FileDescriptorProto`s, not a `FileDescriptorSet`).
    Protobuf(prost_reflect::MessageDescriptor),
    /// Nothing to decode the payloads with: why, with a hint where there is
    /// one (the error `read_topic` reports).
    Unavailable(String),
}

/// What the engine knows about one chunk before reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    /// Position of the chunk in [`Summary::chunks`].
    pub index: usize,
    /// File offset of the chunk's first byte. A byte-range partition `[a, b)` reads
    /// exactly the chunks whose `offset` lies in it, so no chunk is read twice.
    pub offset: u64,
    /// Bytes the chunk occupies in the file (compressed, with its framing).
    pub length: u64,
    /// Earliest `log_time` in the chunk (inclusive), when known.
    pub start_time: Option<Nanos>,
    /// Latest `log_time` in the chunk (inclusive), when known.
    pub end_time: Option<Nanos>,
    /// Number of messages, when known.
    pub message_count: Option<u64>,
    /// Channel ids present in the chunk; `None` when the index does not say
    /// (then the chunk is never pruned on topic).
    pub channels: Option<Vec<u64>>,
    /// Compression name (`""` for none, `zstd`, `lz4`, `bz2`, ...).
    pub compression: String,
    /// Size of the compressed payload.
    pub compressed_size: u64,
    /// Size after decompression, when known.
    pub uncompressed_size: Option<u64>,
}

/// An attachment stored in the file (MCAP attachments; other formats' side files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentInfo {
    /// File offset of the attachment record.
    pub offset: u64,
    /// Length of the attachment record.
    pub length: u64,
    /// Attachment name.
    pub name: String,
    /// Media (MIME) type.
    pub media_type: String,
    /// Log time.
    pub log_time: Nanos,
    /// Creation time.
    pub create_time: Nanos,
    /// Size of the attached data.
    pub data_size: u64,
}

/// A named metadata record (key/value pairs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataInfo {
    /// File offset of the metadata record, when known.
    pub offset: Option<u64>,
    /// Record name.
    pub name: String,
    /// Key/value pairs.
    pub metadata: BTreeMap<String, String>,
}

/// Everything a format knows about a file without reading its chunks.
#[derive(Clone, Default)]
pub struct Summary {
    /// Format name (`mcap`, `bag`, ...).
    pub format: &'static str,
    /// File size in bytes.
    pub file_size: u64,
    /// Channels by id.
    pub channels: BTreeMap<u64, Channel>,
    /// Every chunk of the file, in file order. Reading all of them yields every
    /// readable message exactly once.
    pub chunks: Vec<ChunkMeta>,
    /// Whether the chunk list came from the file's own index (`false`: it was
    /// rebuilt by walking the file, or the file has no index).
    pub indexed: bool,
    /// Total number of messages, when the file states it (exact).
    pub message_count: Option<u64>,
    /// Messages per channel id, when the file states them (exact).
    pub channel_message_counts: Option<BTreeMap<u64, u64>>,
    /// Earliest message `log_time` in the file, when known.
    pub start_time: Option<Nanos>,
    /// Latest message `log_time` in the file, when known.
    pub end_time: Option<Nanos>,
    /// Attachments (MCAP).
    pub attachments: Vec<AttachmentInfo>,
    /// Metadata records.
    pub metadata: Vec<MetadataInfo>,
    /// Format-specific facts for `logsql info` (library, profile, version, ...).
    pub properties: Vec<(String, String)>,
    /// Damage found while building the summary (e.g. a truncated tail). The
    /// chunks before the damage are listed and readable; the engine reports
    /// this error after returning them (or logs it, per `on_error`).
    pub damage: Option<Error>,
    /// Reader-private data (per-chunk index details) that [`crate::formats::FormatReader::read_chunk`] needs.
    pub private: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Summary")
            .field("format", &self.format)
            .field("file_size", &self.file_size)
            .field("channels", &self.channels.len())
            .field("chunks", &self.chunks.len())
            .field("indexed", &self.indexed)
            .field("message_count", &self.message_count)
            .field("start_time", &self.start_time)
            .field("end_time", &self.end_time)
            .field("damage", &self.damage)
            .finish()
    }
}

impl Summary {
    /// The reader-private part, downcast to the reader's own type.
    pub fn private<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.private.as_deref().and_then(|p| p.downcast_ref::<T>())
    }

    /// The position of `chunk` in [`Summary::chunks`]: its own `index` when that
    /// still points at it, else found by offset (chunk offsets are unique in a
    /// file). Readers use it to find their private per-chunk detail.
    pub(crate) fn chunk_position(&self, chunk: &ChunkMeta) -> Option<usize> {
        let at = |i: usize| self.chunks.get(i).is_some_and(|c| c.offset == chunk.offset);
        if at(chunk.index) {
            return Some(chunk.index);
        }
        let i = self.chunks.partition_point(|c| c.offset < chunk.offset);
        at(i).then_some(i)
    }

    /// Exact message count per topic, when the file states per-channel counts.
    pub fn topic_message_counts(&self) -> Option<BTreeMap<&str, u64>> {
        let counts = self.channel_message_counts.as_ref()?;
        let mut out = BTreeMap::new();
        for ch in self.channels.values() {
            *out.entry(ch.topic.as_str()).or_insert(0) += counts.get(&ch.id).copied().unwrap_or(0);
        }
        Some(out)
    }
}

/// What a scan needs, so that readers can skip work. Readers may deliver more
/// (the engine filters rows exactly); they must never deliver less.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Inclusive `[min, max]` envelope of the wanted `log_time`s; `None` = all.
    pub time: Option<(Nanos, Nanos)>,
    /// Wanted topics; `None` = all.
    pub topics: Option<HashSet<String>>,
    /// Whether payload bytes are needed (`data` column or a filter on it).
    pub payload: bool,
    /// Whether header fields beyond channel and `log_time` are needed
    /// (`publish_time`, `sequence`). When neither this nor `payload` is set,
    /// a reader may answer from message indexes without decompressing.
    pub full_header: bool,
    /// Size caps on decompression and payloads (the defaults unless the
    /// caller sets them).
    pub limits: crate::limits::Limits,
}

impl Selection {
    /// A selection of everything, payloads included.
    pub fn all() -> Self {
        Self {
            time: None,
            topics: None,
            payload: true,
            full_header: true,
            limits: crate::limits::Limits::default(),
        }
    }

    /// Whether a message at `log_time` may be wanted.
    pub fn wants_time(&self, log_time: Nanos) -> bool {
        self.time
            .is_none_or(|(lo, hi)| lo <= log_time && log_time <= hi)
    }

    /// Whether messages of `topic` may be wanted.
    pub fn wants_topic(&self, topic: &str) -> bool {
        self.topics.as_ref().is_none_or(|t| t.contains(topic))
    }
}

/// One message as a reader delivers it: borrowed, never allocated per message.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// The channel the message belongs to.
    pub channel: &'a Channel,
    /// Log time (ns).
    pub log_time: Nanos,
    /// Publish time (ns), where the format has it.
    pub publish_time: Option<Nanos>,
    /// Sequence number, where the format has it.
    pub sequence: Option<u32>,
    /// The payload, untouched. Empty when the selection did not ask for payloads.
    pub data: &'a [u8],
    /// The shared buffer the reader read the message's chunk into, if it did
    /// ([`crate::formats::chunk_io::ChunkBuf`]): the scan references `data`
    /// there instead of copying it (after checking that it lies inside).
    /// `None` otherwise.
    pub data_buffer: Option<&'a Buffer>,
    /// Values of the format's [`ExtraColumn`]s, in the order
    /// [`crate::formats::FormatReader::extra_columns`] lists them; may be shorter
    /// (missing values are null). Empty for formats without extra columns.
    pub extra: &'a [ExtraValue<'a>],
}

/// A format-specific column of the `messages` table beyond the common ones
/// (CARLA's `frame` and `elapsed`, BDDF's additional index values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtraColumn {
    /// Column name.
    pub name: &'static str,
    /// Value type.
    pub kind: ExtraKind,
    /// One line for the docs / `DESCRIBE`.
    pub doc: &'static str,
}

/// Type of an [`ExtraColumn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraKind {
    /// Unsigned 64-bit integer.
    UInt64,
    /// Signed 64-bit integer.
    Int64,
    /// 64-bit float.
    Float64,
    /// Map from name to signed 64-bit integer (Arrow `Map<Utf8, Int64>`).
    Int64Map,
}

/// One value of an [`ExtraColumn`], borrowed like the rest of a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ExtraValue<'a> {
    /// No value.
    Null,
    /// For [`ExtraKind::UInt64`].
    UInt64(u64),
    /// For [`ExtraKind::Int64`].
    Int64(i64),
    /// For [`ExtraKind::Float64`].
    Float64(f64),
    /// For [`ExtraKind::Int64Map`]: `keys[i]` maps to `values[i]`.
    Int64Map {
        /// Entry names.
        keys: &'a [String],
        /// Entry values (same length as `keys`).
        values: &'a [i64],
    },
}

/// Whether a receiver wants more messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// Stop reading (a `LIMIT` was reached or the consumer went away).
    Stop,
}

/// Receives the messages of a chunk.
pub trait MessageReceiver {
    /// Takes one message.
    fn message(&mut self, msg: Message<'_>) -> Flow;
}

impl<F: FnMut(Message<'_>) -> Flow> MessageReceiver for F {
    fn message(&mut self, msg: Message<'_>) -> Flow {
        self(msg)
    }
}

/// What reading one chunk cost, for the scan metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkRead {
    /// Bytes produced by decompression (0 for uncompressed chunks).
    pub bytes_decompressed: u64,
    /// Messages parsed (delivered or skipped by the selection).
    pub messages: u64,
    /// Whether the receiver asked to stop.
    pub stopped: bool,
    /// Whether the chunk was not read after all: the format's own finer index
    /// (e.g. MCAP message indexes) showed that nothing in it is selected.
    pub skipped: bool,
    /// Whether the messages were answered from the format's message index
    /// (channel and `log_time` only) without reading the chunk: a chunk that
    /// no longer decompresses still counts its messages there (readers do
    /// so only when the selection wants neither payloads nor full headers).
    pub from_index: bool,
}

/// Message log times per channel id, gathered chunk by chunk from a format's
/// own index (see [`crate::formats::FormatReader::chunk_times`]), in no
/// particular order. The few channels of a file are kept in a small list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelTimes {
    channels: Vec<(u64, Vec<u64>)>,
}

impl ChannelTimes {
    /// The times of channel `id`, to append to (created empty when new).
    pub(crate) fn times_mut(&mut self, id: u64) -> &mut Vec<u64> {
        let i = match self.channels.iter().position(|(c, _)| *c == id) {
            Some(i) => i,
            None => {
                self.channels.push((id, Vec::new()));
                self.channels.len() - 1
            }
        };
        &mut self.channels[i].1
    }

    /// Whether no channel has times.
    pub fn is_empty(&self) -> bool {
        self.channels.iter().all(|(_, t)| t.is_empty())
    }

    /// `(channel id, times)` per channel, in the order the channels were first met.
    pub fn into_channels(self) -> Vec<(u64, Vec<u64>)> {
        self.channels
    }
}
