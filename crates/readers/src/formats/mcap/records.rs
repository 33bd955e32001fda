//! MCAP records: opcodes, borrowed record structs and their parsers.
//!
//! This module owns the byte layout of every MCAP record (spec section 2.2).
//! Parsers work on one record's *content* (the bytes after the 9-byte
//! `opcode | length` prefix) and never allocate: strings, byte fields and maps
//! borrow from the content.
//!
//! Records are *extensible*: a writer may append fields a reader does not know
//! (the conformance `pad` variants append `01 FF FF`). Every parser therefore
//! reads the fields it knows from the front of the content and ignores the rest,
//! and every length-prefixed field is read through its own prefix. Only
//! [`Message::data`] is "the rest of the record".
//!
//! A parse failure is a [`FieldError`] giving the position *inside the content*;
//! callers add the file offset when they turn it into a crate [`Error`](crate::Error).

use std::fmt;

/// The 8 magic bytes at both ends of an MCAP file (`\x89MCAP0\r\n`).
pub const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";

/// Bytes in a record's `opcode u8 | length u64` prefix.
pub(crate) const RECORD_PREFIX_LEN: u64 = 9;

/// Bytes of a Footer record's content.
pub(crate) const FOOTER_CONTENT_LEN: u64 = 20;

/// Bytes at the end of every complete file: the Footer record and the magic.
pub(crate) const FOOTER_AND_MAGIC_LEN: u64 = RECORD_PREFIX_LEN + FOOTER_CONTENT_LEN + 8;

/// Bytes of a Message record's fixed header (channel, sequence, log and publish time).
pub(crate) const MESSAGE_HEADER_LEN: usize = 2 + 4 + 8 + 8;

/// Record opcodes.
pub mod op {
    /// Header.
    pub(crate) const HEADER: u8 = 0x01;
    /// Footer.
    pub(crate) const FOOTER: u8 = 0x02;
    /// Schema.
    pub(crate) const SCHEMA: u8 = 0x03;
    /// Channel.
    pub const CHANNEL: u8 = 0x04;
    /// Message.
    pub const MESSAGE: u8 = 0x05;
    /// Chunk.
    pub const CHUNK: u8 = 0x06;
    /// MessageIndex.
    pub(crate) const MESSAGE_INDEX: u8 = 0x07;
    /// ChunkIndex.
    pub(crate) const CHUNK_INDEX: u8 = 0x08;
    /// Attachment.
    pub(crate) const ATTACHMENT: u8 = 0x09;
    /// AttachmentIndex.
    pub(crate) const ATTACHMENT_INDEX: u8 = 0x0A;
    /// Statistics.
    pub(crate) const STATISTICS: u8 = 0x0B;
    /// Metadata.
    pub const METADATA: u8 = 0x0C;
    /// MetadataIndex.
    pub(crate) const METADATA_INDEX: u8 = 0x0D;
    /// SummaryOffset.
    pub(crate) const SUMMARY_OFFSET: u8 = 0x0E;
    /// DataEnd.
    pub const DATA_END: u8 = 0x0F;

    /// The record type's name as the MCAP spec writes it (`"Unknown"` otherwise).
    pub fn name(opcode: u8) -> &'static str {
        match opcode {
            HEADER => "Header",
            FOOTER => "Footer",
            SCHEMA => "Schema",
            CHANNEL => "Channel",
            MESSAGE => "Message",
            CHUNK => "Chunk",
            MESSAGE_INDEX => "MessageIndex",
            CHUNK_INDEX => "ChunkIndex",
            ATTACHMENT => "Attachment",
            ATTACHMENT_INDEX => "AttachmentIndex",
            STATISTICS => "Statistics",
            METADATA => "Metadata",
            METADATA_INDEX => "MetadataIndex",
            SUMMARY_OFFSET => "SummaryOffset",
            DATA_END => "DataEnd",
            _ => "Unknown",
        }
    }
}

/// A record's content could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Position inside the record content where parsing failed.
    pub pos: usize,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (at byte {} of the record content)",
            self.message, self.pos
        )
    }
}

impl std::error::Error for FieldError {}

/// Result of parsing a record's content.
pub(crate) type ParseResult<T> = Result<T, FieldError>;

/// A forward cursor over one record's content. Every read is bounds-checked.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn err(&self, message: String) -> FieldError {
        FieldError {
            pos: self.pos,
            message,
        }
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> ParseResult<&'a [u8]> {
        let slice = self
            .pos
            .checked_add(n)
            .and_then(|end| self.buf.get(self.pos..end));
        match slice {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.err(format!(
                "{what} needs {n} bytes but only {} remain in the record",
                self.remaining()
            ))),
        }
    }

    fn array<const N: usize>(&mut self, what: &str) -> ParseResult<[u8; N]> {
        let bytes = self.take(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// A `u8`.
    pub fn u8(&mut self, what: &str) -> ParseResult<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self, what: &str) -> ParseResult<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self, what: &str) -> ParseResult<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self, what: &str) -> ParseResult<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn len_u64(&mut self, len: u64, what: &str) -> ParseResult<usize> {
        match usize::try_from(len) {
            Ok(n) if n <= self.remaining() => Ok(n),
            _ => Err(self.err(format!(
                "{what} declares {len} bytes but only {} remain in the record",
                self.remaining()
            ))),
        }
    }

    /// Bytes prefixed by a `u32` length.
    pub(crate) fn bytes_u32(&mut self, what: &str) -> ParseResult<&'a [u8]> {
        let start = self.pos;
        let len = u64::from(self.u32(what)?);
        let n = self
            .len_u64(len, what)
            .map_err(|e| FieldError { pos: start, ..e })?;
        self.take(n, what)
    }

    /// Bytes prefixed by a `u64` length.
    pub(crate) fn bytes_u64(&mut self, what: &str) -> ParseResult<&'a [u8]> {
        let start = self.pos;
        let len = self.u64(what)?;
        let n = self
            .len_u64(len, what)
            .map_err(|e| FieldError { pos: start, ..e })?;
        self.take(n, what)
    }

    /// A `u32`-length-prefixed UTF-8 string.
    pub fn string(&mut self, what: &str) -> ParseResult<&'a str> {
        let start = self.pos;
        let bytes = self.bytes_u32(what)?;
        std::str::from_utf8(bytes).map_err(|e| FieldError {
            pos: start,
            message: format!("{what} is not valid UTF-8: {e}"),
        })
    }

    /// Everything not yet consumed.
    pub fn rest(&mut self) -> &'a [u8] {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        rest
    }
}

/// A `Map<String, String>` field, validated at parse time and iterated lazily.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct StrMap<'a> {
    raw: &'a [u8],
}

impl<'a> StrMap<'a> {
    fn parse(c: &mut Cursor<'a>, what: &str) -> ParseResult<Self> {
        let start = c.pos();
        let raw = c.bytes_u32(what)?;
        let mut inner = Cursor::new(raw);
        while inner.remaining() > 0 {
            inner
                .string("map key")
                .and_then(|_| inner.string("map value"))
                .map_err(|e| FieldError {
                    pos: start + 4 + e.pos,
                    message: format!("{what}: {}", e.message),
                })?;
        }
        Ok(Self { raw })
    }

    /// The key/value pairs in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let mut c = Cursor::new(self.raw);
        std::iter::from_fn(move || {
            if c.remaining() == 0 {
                return None;
            }
            // Validated in `parse`, so these reads succeed; stop quietly if not.
            let k = c.string("key").ok()?;
            let v = c.string("value").ok()?;
            Some((k, v))
        })
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The map as owned strings (later duplicates win).
    pub fn to_btree(&self) -> std::collections::BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl fmt::Debug for StrMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A `Map<u16, u64>` field (channel id to offset or count), iterated lazily.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct IdMap<'a> {
    raw: &'a [u8],
}

impl<'a> IdMap<'a> {
    fn parse(c: &mut Cursor<'a>, what: &str) -> ParseResult<Self> {
        let start = c.pos();
        let raw = c.bytes_u32(what)?;
        if raw.len() % 10 != 0 {
            return Err(FieldError {
                pos: start,
                message: format!(
                    "{what} is {} bytes, not a whole number of 10-byte entries",
                    raw.len()
                ),
            });
        }
        Ok(Self { raw })
    }

    /// The `(id, value)` pairs in file order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u64)> + 'a {
        self.raw.chunks_exact(10).map(|e| {
            let mut id = [0u8; 2];
            let mut v = [0u8; 8];
            id.copy_from_slice(e.get(..2).unwrap_or(&[0; 2]));
            v.copy_from_slice(e.get(2..).unwrap_or(&[0; 8]));
            (u16::from_le_bytes(id), u64::from_le_bytes(v))
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.raw.len() / 10
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

impl fmt::Debug for IdMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Header (0x01): first record of every file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// Profile (`ros1`, `ros2`, or custom; may be empty).
    pub profile: &'a str,
    /// Writing library.
    pub library: &'a str,
}

/// Footer (0x02): last record of every complete file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Offset of the summary section, 0 when there is none.
    pub summary_start: u64,
    /// Offset of the summary offset section, 0 when there is none.
    pub summary_offset_start: u64,
    /// CRC32 of the summary sections and the footer's first fields; 0 = not computed.
    pub summary_crc: u32,
}

/// Schema (0x03).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema<'a> {
    /// Schema id (0 is invalid).
    pub id: u16,
    /// Schema name (message type).
    pub name: &'a str,
    /// Schema encoding (`ros1msg`, `protobuf`, ...).
    pub encoding: &'a str,
    /// Schema data (read through its own `u32` length).
    pub data: &'a [u8],
}

/// Channel (0x04).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Channel<'a> {
    /// Channel id.
    pub id: u16,
    /// Schema id, 0 when schemaless.
    pub schema_id: u16,
    /// Topic.
    pub topic: &'a str,
    /// Message encoding.
    pub message_encoding: &'a str,
    /// User metadata.
    pub metadata: StrMap<'a>,
}

/// The fixed header of a Message record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageHeader {
    /// Channel id.
    pub channel_id: u16,
    /// Sequence number.
    pub sequence: u32,
    /// Log time (ns).
    pub log_time: u64,
    /// Publish time (ns).
    pub publish_time: u64,
}

/// Message (0x05).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// The fixed fields.
    pub header: MessageHeader,
    /// The payload: the rest of the record.
    pub data: &'a [u8],
}

/// The fields of a Chunk record before its (compressed) records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader<'a> {
    /// Earliest message log time in the chunk.
    pub message_start_time: u64,
    /// Latest message log time in the chunk.
    pub message_end_time: u64,
    /// Size of the records after decompression.
    pub uncompressed_size: u64,
    /// CRC32 of the decompressed records; 0 = not computed.
    pub uncompressed_crc: u32,
    /// Compression (`""`, `zstd`, `lz4`).
    pub compression: &'a str,
    /// Size of the compressed records.
    pub compressed_size: u64,
}

/// Chunk (0x06).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// The header fields.
    pub header: ChunkHeader<'a>,
    /// Position of `records` inside the record content.
    pub(crate) records_pos: usize,
    /// The compressed records.
    pub records: &'a [u8],
}

/// MessageIndex (0x07): `(log_time, offset)` of one channel's messages in the preceding chunk.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MessageIndex<'a> {
    /// Channel id.
    pub channel_id: u16,
    raw: &'a [u8],
}

impl<'a> MessageIndex<'a> {
    /// The `(log_time, offset)` entries; offsets are into the decompressed chunk records.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u64)> + 'a {
        self.raw.chunks_exact(16).map(|e| {
            let mut t = [0u8; 8];
            let mut o = [0u8; 8];
            t.copy_from_slice(e.get(..8).unwrap_or(&[0; 8]));
            o.copy_from_slice(e.get(8..).unwrap_or(&[0; 8]));
            (u64::from_le_bytes(t), u64::from_le_bytes(o))
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.raw.len() / 16
    }

    /// Whether the index has no entries.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

impl fmt::Debug for MessageIndex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageIndex")
            .field("channel_id", &self.channel_id)
            .field("entries", &self.len())
            .finish()
    }
}

/// ChunkIndex (0x08).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkIndex<'a> {
    /// Earliest message log time in the chunk.
    pub message_start_time: u64,
    /// Latest message log time in the chunk.
    pub message_end_time: u64,
    /// File offset of the Chunk record.
    pub chunk_start_offset: u64,
    /// Length of the Chunk record, prefix included.
    pub chunk_length: u64,
    /// Channel id to file offset of its MessageIndex record; empty = not written.
    pub message_index_offsets: IdMap<'a>,
    /// Total length of the MessageIndex records after the chunk.
    pub message_index_length: u64,
    /// Compression.
    pub compression: &'a str,
    /// Compressed size of the records.
    pub compressed_size: u64,
    /// Uncompressed size of the records.
    pub uncompressed_size: u64,
}

/// The fields of an Attachment record before its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachmentHeader<'a> {
    /// Log time.
    pub log_time: u64,
    /// Creation time.
    pub create_time: u64,
    /// Name.
    pub name: &'a str,
    /// Media type.
    pub media_type: &'a str,
    /// Length of the data.
    pub data_len: u64,
}

/// Attachment (0x09).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attachment<'a> {
    /// The header fields.
    pub header: AttachmentHeader<'a>,
    /// The attached bytes.
    pub data: &'a [u8],
    /// CRC32 of everything before it in the content; 0 = not computed.
    pub crc: u32,
    /// Bytes of content the CRC covers.
    pub(crate) crc_covered_len: usize,
}

/// AttachmentIndex (0x0A).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachmentIndex<'a> {
    /// File offset of the Attachment record.
    pub offset: u64,
    /// Length of the Attachment record.
    pub length: u64,
    /// Log time.
    pub log_time: u64,
    /// Creation time.
    pub create_time: u64,
    /// Data size.
    pub data_size: u64,
    /// Name.
    pub name: &'a str,
    /// Media type.
    pub media_type: &'a str,
}

/// Statistics (0x0B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statistics<'a> {
    /// Number of messages.
    pub message_count: u64,
    /// Number of schemas.
    pub schema_count: u16,
    /// Number of channels.
    pub channel_count: u32,
    /// Number of attachments.
    pub attachment_count: u32,
    /// Number of metadata records.
    pub metadata_count: u32,
    /// Number of chunks.
    pub chunk_count: u32,
    /// Earliest message log time (0 when there are no messages).
    pub message_start_time: u64,
    /// Latest message log time.
    pub message_end_time: u64,
    /// Messages per channel id; empty = not available.
    pub channel_message_counts: IdMap<'a>,
}

/// Metadata (0x0C).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata<'a> {
    /// Name.
    pub name: &'a str,
    /// Key/value pairs.
    pub metadata: StrMap<'a>,
}

/// MetadataIndex (0x0D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataIndex<'a> {
    /// File offset of the Metadata record.
    pub offset: u64,
    /// Length of the Metadata record.
    pub length: u64,
    /// Name.
    pub name: &'a str,
}

/// SummaryOffset (0x0E).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryOffset {
    /// Opcode of the records in the group.
    pub group_opcode: u8,
    /// File offset of the group.
    pub group_start: u64,
    /// Length of the group.
    pub group_length: u64,
}

/// DataEnd (0x0F).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataEnd {
    /// CRC32 of the file up to this record; 0 = not computed.
    pub data_section_crc: u32,
}

/// Any MCAP record, borrowed from the bytes it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// Header.
    Header(Header<'a>),
    /// Footer.
    Footer(Footer),
    /// Schema.
    Schema(Schema<'a>),
    /// Channel.
    Channel(Channel<'a>),
    /// Message.
    Message(Message<'a>),
    /// Chunk (not decompressed).
    Chunk(Chunk<'a>),
    /// MessageIndex.
    MessageIndex(MessageIndex<'a>),
    /// ChunkIndex.
    ChunkIndex(ChunkIndex<'a>),
    /// Attachment.
    Attachment(Attachment<'a>),
    /// AttachmentIndex.
    AttachmentIndex(AttachmentIndex<'a>),
    /// Statistics.
    Statistics(Statistics<'a>),
    /// Metadata.
    Metadata(Metadata<'a>),
    /// MetadataIndex.
    MetadataIndex(MetadataIndex<'a>),
    /// SummaryOffset.
    SummaryOffset(SummaryOffset),
    /// DataEnd.
    DataEnd(DataEnd),
    /// A record with an opcode this reader does not know (private or future).
    Unknown {
        /// The opcode.
        opcode: u8,
        /// The raw content.
        data: &'a [u8],
    },
}

impl Record<'_> {
    /// The record's opcode.
    pub fn opcode(&self) -> u8 {
        match self {
            Record::Header(_) => op::HEADER,
            Record::Footer(_) => op::FOOTER,
            Record::Schema(_) => op::SCHEMA,
            Record::Channel(_) => op::CHANNEL,
            Record::Message(_) => op::MESSAGE,
            Record::Chunk(_) => op::CHUNK,
            Record::MessageIndex(_) => op::MESSAGE_INDEX,
            Record::ChunkIndex(_) => op::CHUNK_INDEX,
            Record::Attachment(_) => op::ATTACHMENT,
            Record::AttachmentIndex(_) => op::ATTACHMENT_INDEX,
            Record::Statistics(_) => op::STATISTICS,
            Record::Metadata(_) => op::METADATA,
            Record::MetadataIndex(_) => op::METADATA_INDEX,
            Record::SummaryOffset(_) => op::SUMMARY_OFFSET,
            Record::DataEnd(_) => op::DATA_END,
            Record::Unknown { opcode, .. } => *opcode,
        }
    }

    /// The record type's name (`"Message"`, `"Unknown"`, ...).
    pub fn type_name(&self) -> &'static str {
        op::name(self.opcode())
    }
}

/// Reads a Header.
pub(crate) fn parse_header(content: &[u8]) -> ParseResult<Header<'_>> {
    let mut c = Cursor::new(content);
    Ok(Header {
        profile: c.string("header profile")?,
        library: c.string("header library")?,
    })
}

/// Reads a Footer.
pub(crate) fn parse_footer(content: &[u8]) -> ParseResult<Footer> {
    let mut c = Cursor::new(content);
    Ok(Footer {
        summary_start: c.u64("footer summary_start")?,
        summary_offset_start: c.u64("footer summary_offset_start")?,
        summary_crc: c.u32("footer summary_crc")?,
    })
}

/// Reads a Schema.
pub(crate) fn parse_schema(content: &[u8]) -> ParseResult<Schema<'_>> {
    let mut c = Cursor::new(content);
    Ok(Schema {
        id: c.u16("schema id")?,
        name: c.string("schema name")?,
        encoding: c.string("schema encoding")?,
        data: c.bytes_u32("schema data")?,
    })
}

/// Reads a Channel.
pub(crate) fn parse_channel(content: &[u8]) -> ParseResult<Channel<'_>> {
    let mut c = Cursor::new(content);
    Ok(Channel {
        id: c.u16("channel id")?,
        schema_id: c.u16("channel schema_id")?,
        topic: c.string("channel topic")?,
        message_encoding: c.string("channel message_encoding")?,
        metadata: StrMap::parse(&mut c, "channel metadata")?,
    })
}

/// Reads a Message's fixed header from the front of `content`.
pub(crate) fn parse_message_header(content: &[u8]) -> ParseResult<MessageHeader> {
    let mut c = Cursor::new(content);
    Ok(MessageHeader {
        channel_id: c.u16("message channel_id")?,
        sequence: c.u32("message sequence")?,
        log_time: c.u64("message log_time")?,
        publish_time: c.u64("message publish_time")?,
    })
}

/// Reads a Message.
pub(crate) fn parse_message(content: &[u8]) -> ParseResult<Message<'_>> {
    let header = parse_message_header(content)?;
    Ok(Message {
        header,
        data: content.get(MESSAGE_HEADER_LEN..).unwrap_or(&[]),
    })
}

/// Reads a Chunk's header fields from a prefix of its content.
///
/// Returns the header and the position where the compressed records start.
/// `content` may be only the front of the record (e.g. when the records are
/// skipped by length); [`ChunkHeader::compressed_size`] is not checked here.
pub(crate) fn parse_chunk_header(content: &[u8]) -> ParseResult<(ChunkHeader<'_>, usize)> {
    let mut c = Cursor::new(content);
    let header = ChunkHeader {
        message_start_time: c.u64("chunk message_start_time")?,
        message_end_time: c.u64("chunk message_end_time")?,
        uncompressed_size: c.u64("chunk uncompressed_size")?,
        uncompressed_crc: c.u32("chunk uncompressed_crc")?,
        compression: c.string("chunk compression")?,
        compressed_size: c.u64("chunk records length")?,
    };
    Ok((header, c.pos()))
}

/// Reads a whole Chunk (its records stay compressed).
pub(crate) fn parse_chunk(content: &[u8]) -> ParseResult<Chunk<'_>> {
    let (header, records_pos) = parse_chunk_header(content)?;
    let mut c = Cursor::new(content);
    c.take(records_pos.saturating_sub(8), "chunk header")?;
    let records = c.bytes_u64("chunk records")?;
    Ok(Chunk {
        header,
        records_pos,
        records,
    })
}

/// Reads a MessageIndex.
pub(crate) fn parse_message_index(content: &[u8]) -> ParseResult<MessageIndex<'_>> {
    let mut c = Cursor::new(content);
    let channel_id = c.u16("message index channel_id")?;
    let start = c.pos();
    let raw = c.bytes_u32("message index records")?;
    if raw.len() % 16 != 0 {
        return Err(FieldError {
            pos: start,
            message: format!(
                "message index records are {} bytes, not a whole number of 16-byte entries",
                raw.len()
            ),
        });
    }
    Ok(MessageIndex { channel_id, raw })
}

/// Reads a ChunkIndex.
pub(crate) fn parse_chunk_index(content: &[u8]) -> ParseResult<ChunkIndex<'_>> {
    let mut c = Cursor::new(content);
    Ok(ChunkIndex {
        message_start_time: c.u64("chunk index message_start_time")?,
        message_end_time: c.u64("chunk index message_end_time")?,
        chunk_start_offset: c.u64("chunk index chunk_start_offset")?,
        chunk_length: c.u64("chunk index chunk_length")?,
        message_index_offsets: IdMap::parse(&mut c, "chunk index message_index_offsets")?,
        message_index_length: c.u64("chunk index message_index_length")?,
        compression: c.string("chunk index compression")?,
        compressed_size: c.u64("chunk index compressed_size")?,
        uncompressed_size: c.u64("chunk index uncompressed_size")?,
    })
}

/// Reads an Attachment's fields before its data from a prefix of its content.
///
/// Returns the header and the position where the data starts.
pub(crate) fn parse_attachment_header(
    content: &[u8],
) -> ParseResult<(AttachmentHeader<'_>, usize)> {
    let mut c = Cursor::new(content);
    let header = AttachmentHeader {
        log_time: c.u64("attachment log_time")?,
        create_time: c.u64("attachment create_time")?,
        name: c.string("attachment name")?,
        media_type: c.string("attachment media_type")?,
        data_len: c.u64("attachment data length")?,
    };
    Ok((header, c.pos()))
}

/// Reads an Attachment.
pub fn parse_attachment(content: &[u8]) -> ParseResult<Attachment<'_>> {
    let (header, data_pos) = parse_attachment_header(content)?;
    let mut c = Cursor::new(content);
    c.take(data_pos.saturating_sub(8), "attachment header")?;
    let data = c.bytes_u64("attachment data")?;
    let crc_covered_len = c.pos();
    let crc = c.u32("attachment crc")?;
    Ok(Attachment {
        header,
        data,
        crc,
        crc_covered_len,
    })
}

/// Reads an AttachmentIndex.
pub(crate) fn parse_attachment_index(content: &[u8]) -> ParseResult<AttachmentIndex<'_>> {
    let mut c = Cursor::new(content);
    Ok(AttachmentIndex {
        offset: c.u64("attachment index offset")?,
        length: c.u64("attachment index length")?,
        log_time: c.u64("attachment index log_time")?,
        create_time: c.u64("attachment index create_time")?,
        data_size: c.u64("attachment index data_size")?,
        name: c.string("attachment index name")?,
        media_type: c.string("attachment index media_type")?,
    })
}

/// Reads a Statistics record.
pub(crate) fn parse_statistics(content: &[u8]) -> ParseResult<Statistics<'_>> {
    let mut c = Cursor::new(content);
    Ok(Statistics {
        message_count: c.u64("statistics message_count")?,
        schema_count: c.u16("statistics schema_count")?,
        channel_count: c.u32("statistics channel_count")?,
        attachment_count: c.u32("statistics attachment_count")?,
        metadata_count: c.u32("statistics metadata_count")?,
        chunk_count: c.u32("statistics chunk_count")?,
        message_start_time: c.u64("statistics message_start_time")?,
        message_end_time: c.u64("statistics message_end_time")?,
        channel_message_counts: IdMap::parse(&mut c, "statistics channel_message_counts")?,
    })
}

/// Reads a Metadata record.
pub(crate) fn parse_metadata(content: &[u8]) -> ParseResult<Metadata<'_>> {
    let mut c = Cursor::new(content);
    Ok(Metadata {
        name: c.string("metadata name")?,
        metadata: StrMap::parse(&mut c, "metadata map")?,
    })
}

/// Reads a MetadataIndex.
pub(crate) fn parse_metadata_index(content: &[u8]) -> ParseResult<MetadataIndex<'_>> {
    let mut c = Cursor::new(content);
    Ok(MetadataIndex {
        offset: c.u64("metadata index offset")?,
        length: c.u64("metadata index length")?,
        name: c.string("metadata index name")?,
    })
}

/// Reads a SummaryOffset.
pub(crate) fn parse_summary_offset(content: &[u8]) -> ParseResult<SummaryOffset> {
    let mut c = Cursor::new(content);
    Ok(SummaryOffset {
        group_opcode: c.u8("summary offset group_opcode")?,
        group_start: c.u64("summary offset group_start")?,
        group_length: c.u64("summary offset group_length")?,
    })
}

/// Reads a DataEnd.
pub(crate) fn parse_data_end(content: &[u8]) -> ParseResult<DataEnd> {
    let mut c = Cursor::new(content);
    Ok(DataEnd {
        data_section_crc: c.u32("data end data_section_crc")?,
    })
}

/// Parses one record's content according to its opcode. Unknown opcodes give
/// [`Record::Unknown`]; known ones tolerate extra trailing bytes.
pub(crate) fn parse_record(opcode: u8, content: &[u8]) -> ParseResult<Record<'_>> {
    Ok(match opcode {
        op::HEADER => Record::Header(parse_header(content)?),
        op::FOOTER => Record::Footer(parse_footer(content)?),
        op::SCHEMA => Record::Schema(parse_schema(content)?),
        op::CHANNEL => Record::Channel(parse_channel(content)?),
        op::MESSAGE => Record::Message(parse_message(content)?),
        op::CHUNK => Record::Chunk(parse_chunk(content)?),
        op::MESSAGE_INDEX => Record::MessageIndex(parse_message_index(content)?),
        op::CHUNK_INDEX => Record::ChunkIndex(parse_chunk_index(content)?),
        op::ATTACHMENT => Record::Attachment(parse_attachment(content)?),
        op::ATTACHMENT_INDEX => Record::AttachmentIndex(parse_attachment_index(content)?),
        op::STATISTICS => Record::Statistics(parse_statistics(content)?),
        op::METADATA => Record::Metadata(parse_metadata(content)?),
        op::METADATA_INDEX => Record::MetadataIndex(parse_metadata_index(content)?),
        op::SUMMARY_OFFSET => Record::SummaryOffset(parse_summary_offset(content)?),
        op::DATA_END => Record::DataEnd(parse_data_end(content)?),
        opcode => Record::Unknown {
            opcode,
            data: content,
        },
    })
}

/// One record found in a byte slice by [`SliceRecords`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawRecord<'a> {
    /// Position of the record's opcode in the slice.
    pub pos: usize,
    /// Opcode.
    pub opcode: u8,
    /// Content (after the 9-byte prefix).
    pub content: &'a [u8],
}

/// Splits a byte slice (decompressed chunk records, a summary section) into
/// records by their length prefixes, without parsing them.
///
/// Yields an error (once, then stops) when a record's length runs past the end.
#[derive(Debug, Clone)]
pub(crate) struct SliceRecords<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> SliceRecords<'a> {
    /// Iterates the records of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for SliceRecords<'a> {
    type Item = ParseResult<RawRecord<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let pos = self.pos;
        let rest = self.buf.get(pos..).unwrap_or(&[]);
        if rest.len() < RECORD_PREFIX_LEN as usize {
            self.failed = true;
            let message = format!("{} trailing bytes are too short for a record", rest.len());
            return Some(Err(FieldError { pos, message }));
        }
        let opcode = rest.first().copied().unwrap_or(0);
        let mut len = [0u8; 8];
        len.copy_from_slice(rest.get(1..9).unwrap_or(&[0; 8]));
        let len = u64::from_le_bytes(len);
        let room = rest.len() - RECORD_PREFIX_LEN as usize;
        match usize::try_from(len).ok().filter(|&n| n <= room) {
            Some(n) => {
                let content = rest
                    .get(RECORD_PREFIX_LEN as usize..RECORD_PREFIX_LEN as usize + n)
                    .unwrap_or(&[]);
                self.pos = pos + RECORD_PREFIX_LEN as usize + n;
                Some(Ok(RawRecord {
                    pos,
                    opcode,
                    content,
                }))
            }
            None => {
                self.failed = true;
                let message = format!(
                    "{} record of {len} bytes runs past the end ({room} bytes left)",
                    op::name(opcode)
                );
                Some(Err(FieldError { pos, message }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> Vec<u8> {
        let mut v = (s.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(s.as_bytes());
        v
    }

    fn record(opcode: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![opcode];
        v.extend_from_slice(&(content.len() as u64).to_le_bytes());
        v.extend_from_slice(content);
        v
    }

    const PAD: [u8; 3] = [0x01, 0xFF, 0xFF];

    #[test]
    fn padded_schema_reads_data_through_its_own_length() {
        let mut content = 7u16.to_le_bytes().to_vec();
        content.extend(string("Example"));
        content.extend(string("c"));
        content.extend(3u32.to_le_bytes());
        content.extend([4, 5, 6]);
        content.extend(PAD);
        let s = parse_schema(&content).unwrap();
        assert_eq!(
            s,
            Schema {
                id: 7,
                name: "Example",
                encoding: "c",
                data: &[4, 5, 6]
            }
        );
    }

    #[test]
    fn padded_channel_and_maps() {
        let mut content = 1u16.to_le_bytes().to_vec();
        content.extend(0u16.to_le_bytes());
        content.extend(string("example"));
        content.extend(string("text"));
        let mut map = string("foo");
        map.extend(string("bar"));
        content.extend((map.len() as u32).to_le_bytes());
        content.extend(&map);
        content.extend(PAD);
        let ch = parse_channel(&content).unwrap();
        assert_eq!(
            (ch.id, ch.schema_id, ch.topic, ch.message_encoding),
            (1, 0, "example", "text")
        );
        assert_eq!(ch.metadata.iter().collect::<Vec<_>>(), vec![("foo", "bar")]);
    }

    #[test]
    fn map_with_broken_entry_is_rejected() {
        let mut content = 1u16.to_le_bytes().to_vec();
        content.extend(0u16.to_le_bytes());
        content.extend(string("t"));
        content.extend(string("e"));
        // A map of 5 bytes whose key claims 100 bytes.
        content.extend(5u32.to_le_bytes());
        content.extend(100u32.to_le_bytes());
        content.push(b'x');
        let err = parse_channel(&content).unwrap_err();
        assert!(err.message.contains("channel metadata"), "{err}");
    }

    #[test]
    fn message_data_is_rest_of_record() {
        let mut content = 3u16.to_le_bytes().to_vec();
        content.extend(10u32.to_le_bytes());
        content.extend(2u64.to_le_bytes());
        content.extend(1u64.to_le_bytes());
        content.extend([1, 2, 3]);
        let m = parse_message(&content).unwrap();
        assert_eq!(
            m.header,
            MessageHeader {
                channel_id: 3,
                sequence: 10,
                log_time: 2,
                publish_time: 1
            }
        );
        assert_eq!(m.data, &[1, 2, 3]);
        assert!(parse_message(&content[..21]).is_err());
    }

    #[test]
    fn huge_lengths_are_errors_not_allocations() {
        let mut content = vec![0u8; 8 * 3 + 4];
        content.extend(u32::MAX.to_le_bytes());
        let err = parse_chunk_header(&content).unwrap_err();
        assert_eq!(err.pos, 28);
        assert!(err.message.contains("4294967295"), "{err}");
        let mut content = vec![0u8; 8 * 3 + 4];
        content.extend(string("zstd"));
        content.extend(u64::MAX.to_le_bytes());
        let (h, pos) = parse_chunk_header(&content).unwrap();
        assert_eq!(
            (h.compression, h.compressed_size, pos),
            ("zstd", u64::MAX, content.len())
        );
        assert!(parse_chunk(&content).is_err());
    }

    #[test]
    fn unknown_opcodes_are_kept_raw_and_skipped_by_length() {
        let mut buf = record(0x80, &[9, 9, 9]);
        buf.extend(record(op::DATA_END, &[1, 0, 0, 0, 0x01, 0xFF, 0xFF]));
        buf.extend(record(0x42, &[]));
        let recs: Vec<_> = SliceRecords::new(&buf).map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 3);
        assert_eq!(
            parse_record(recs[0].opcode, recs[0].content).unwrap(),
            Record::Unknown {
                opcode: 0x80,
                data: &[9, 9, 9]
            }
        );
        assert_eq!(
            parse_record(recs[1].opcode, recs[1].content).unwrap(),
            Record::DataEnd(DataEnd {
                data_section_crc: 1
            })
        );
        assert_eq!(recs[2].pos, 12 + 16);
        assert_eq!(
            parse_record(0x42, recs[2].content).unwrap().type_name(),
            "Unknown"
        );
    }

    #[test]
    fn slice_records_reports_overlong_and_short_tails() {
        let mut buf = record(op::DATA_END, &[0; 4]);
        buf.push(op::MESSAGE);
        buf.extend(1000u64.to_le_bytes());
        let mut it = SliceRecords::new(&buf);
        assert!(it.next().unwrap().is_ok());
        let err = it.next().unwrap().unwrap_err();
        assert_eq!(err.pos, 13);
        assert!(it.next().is_none());
        let mut it = SliceRecords::new(&[5, 1, 0]);
        let err = it.next().unwrap().unwrap_err();
        assert!(err.message.contains("too short"), "{err}");
    }

    #[test]
    fn attachment_crc_range_and_padding() {
        let mut content = 2u64.to_le_bytes().to_vec();
        content.extend(1u64.to_le_bytes());
        content.extend(string("myFile"));
        content.extend(string("application/octet-stream"));
        content.extend(3u64.to_le_bytes());
        content.extend([1, 2, 3]);
        let covered = content.len();
        let crc = crc32fast::hash(&content);
        content.extend(crc.to_le_bytes());
        content.extend(PAD);
        let a = parse_attachment(&content).unwrap();
        assert_eq!(
            (a.header.name, a.data, a.crc, a.crc_covered_len),
            ("myFile", &[1u8, 2, 3][..], crc, covered)
        );
    }

    #[test]
    fn message_index_entries() {
        let mut content = 4u16.to_le_bytes().to_vec();
        content.extend(32u32.to_le_bytes());
        for (t, o) in [(5u64, 0u64), (3, 40)] {
            content.extend(t.to_le_bytes());
            content.extend(o.to_le_bytes());
        }
        content.extend(PAD);
        let mi = parse_message_index(&content).unwrap();
        assert_eq!(mi.channel_id, 4);
        assert_eq!(mi.entries().collect::<Vec<_>>(), vec![(5, 0), (3, 40)]);
        content[2] = 31;
        assert!(parse_message_index(&content).is_err());
    }
}
