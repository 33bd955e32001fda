//! Building a BDDF [`Summary`]: file descriptor, trailer, index blocks, and the
//! block scan that replaces a missing or unusable index.
//!
//! 1. **Header.** `"BDDF"` then a descriptor block holding the
//!    `FileFormatDescriptor` (version, annotations, checksum type).
//! 2. **Indexed path.** The 40-byte trailer (`0x02<<56|24`, index offset,
//!    SHA1, `"FDDB"`) points at the `FileIndex` descriptor block; its parallel
//!    arrays give, per series, the offset of a `SeriesBlockIndex` block, which
//!    gives the series descriptor's offset and every data block's offset, time
//!    and additional indexes. No data block is read. Every offset is checked
//!    against the file; an index that does not fit the file is replaced by the
//!    scan (and only noted in the `index` property). An empty descriptor block
//!    as the index (what the writer emits when no series was ever added) is an
//!    empty index, not an error.
//! 3. **Scan.** Without a trailer (a recording that was never closed, or a cut
//!    file), blocks are walked from byte 4 with bounded memory: series
//!    descriptors are collected, data blocks are indexed from their
//!    `DataDescriptor`s (payloads are skipped, not read). The walk stops at the
//!    end block, at the end of the file, or at the first incomplete or
//!    malformed block; everything before is readable and the reason becomes
//!    [`Summary::damage`].
//! 4. **Chunks.** Consecutive data blocks (file order) are grouped into chunks
//!    of about `CHUNK_TARGET` bytes; each chunk remembers its blocks per
//!    series, so a read touches only the selected blocks' bytes.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use prost::Message as _;
use sha1::{Digest, Sha1};

use super::block_index::{self, timestamp_ns};
use super::proto;
use crate::error::{Error, ErrorContext, Result, hex_head};
use crate::io::{ReadAt, SequentialReader};
use crate::model::{Channel, ChunkMeta, MetadataInfo, Nanos, Summary};

/// The magic at byte 0.
pub const MAGIC: &[u8; 4] = b"BDDF";
/// The magic in the last four bytes of a closed file.
pub(crate) const END_MAGIC: &[u8; 4] = b"FDDB";
/// Bytes of the trailer: end-block header, index offset, SHA1, end magic.
pub(crate) const TRAILER_LEN: u64 = 40;
/// Block type of a data block.
pub(crate) const DATA_BLOCK: u8 = 0x00;
/// Block type of a descriptor block.
pub(crate) const DESCRIPTOR_BLOCK: u8 = 0x01;
/// Block type of the end block (the trailer).
pub(crate) const END_BLOCK: u8 = 0x02;
/// Mask of the 56-bit size in a block header.
pub(crate) const SIZE_MASK: u64 = (1 << 56) - 1;
/// Bytes before a data block's `DataDescriptor`: header and `u32` descriptor size.
pub(crate) const DATA_HEAD: u64 = 12;
/// Chunks group data blocks up to this many bytes (unless one block is larger).
///
/// A chunk read whole lands in one reusable buffer
/// ([`crate::byte_buf::ByteBuf`]), which the batches referencing its payloads
/// hold until they are consumed.
pub(crate) const CHUNK_TARGET: u64 = 2 << 20;
/// ... and at most this many blocks.
pub(crate) const CHUNK_MAX_BLOCKS: usize = 4096;
/// `checksum_type` value meaning "no checksum" (the digest bytes are zero).
pub(crate) const CHECKSUM_NONE: i32 = 1;

/// Splits a block header into (type, size).
pub(crate) fn split_header(h: u64) -> (u8, u64) {
    ((h >> 56) as u8, h & SIZE_MASK)
}

/// A little-endian u64 at `at`, if the bytes are there.
pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

/// A little-endian u32 at `at`, if the bytes are there.
pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

/// The series identifier hash: the first 8 bytes (big-endian) of
/// `SHA1(series_type ‖ k1 ‖ v1 ‖ ...)` with the spec keys in byte order.
pub fn identifier_hash(series_type: &str, spec: &[(String, String)]) -> u64 {
    let mut sorted: Vec<&(String, String)> = spec.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut h = Sha1::new();
    h.update(series_type.as_bytes());
    for (k, v) in sorted {
        h.update(k.as_bytes());
        h.update(v.as_bytes());
    }
    let d = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]);
    u64::from_be_bytes(first)
}

/// Hex text of bytes (lower case, no separators).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What kind of data a series holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeriesKind {
    /// Messages (`MessageTypeDescriptor`).
    Message {
        /// MIME type of the payloads (`application/protobuf`, `text/csv`, ...).
        content_type: String,
        /// Type name (`bosdyn.api.RobotState`).
        type_name: String,
        /// Whether the series holds metadata (e.g. RobotId).
        is_metadata: bool,
    },
    /// Plain-old-data samples (`PodTypeDescriptor`).
    Pod {
        /// `PodTypeEnum` value (1 = INT8 ... 10 = FLOAT64).
        pod_type: i32,
        /// Dimensions of one sample (empty: a scalar).
        dims: Vec<u32>,
    },
    /// A struct of other series (`StructTypeDescriptor`; no writer makes them).
    Struct,
    /// No data type set.
    Unset,
}

/// One element type of POD samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodType {
    /// `TYPE_INT8`.
    Int8,
    /// `TYPE_INT16`.
    Int16,
    /// `TYPE_INT32`.
    Int32,
    /// `TYPE_INT64`.
    Int64,
    /// `TYPE_UINT8`.
    UInt8,
    /// `TYPE_UINT16`.
    UInt16,
    /// `TYPE_UINT32`.
    UInt32,
    /// `TYPE_UINT64`.
    UInt64,
    /// `TYPE_FLOAT32`.
    Float32,
    /// `TYPE_FLOAT64`.
    Float64,
}

impl PodType {
    /// The type of a `PodTypeEnum` value, if it is one of the ten.
    pub(crate) fn from_enum(v: i32) -> Option<Self> {
        Some(match v {
            1 => Self::Int8,
            2 => Self::Int16,
            3 => Self::Int32,
            4 => Self::Int64,
            5 => Self::UInt8,
            6 => Self::UInt16,
            7 => Self::UInt32,
            8 => Self::UInt64,
            9 => Self::Float32,
            10 => Self::Float64,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn width(self) -> usize {
        match self {
            Self::Int8 | Self::UInt8 => 1,
            Self::Int16 | Self::UInt16 => 2,
            Self::Int32 | Self::UInt32 | Self::Float32 => 4,
            Self::Int64 | Self::UInt64 | Self::Float64 => 8,
        }
    }
}

/// The enum name of a `PodTypeEnum` value (`TYPE_FLOAT64`), or `TYPE_<n>`.
pub(crate) fn pod_type_name(v: i32) -> String {
    proto::PodTypeEnum::try_from(v)
        .map(|t| t.as_str_name().to_string())
        .unwrap_or_else(|_| format!("TYPE_{v}"))
}

/// One series (a channel), from its `SeriesDescriptor` and block index.
#[derive(Debug, Clone)]
pub struct Series {
    /// `series_index` in the file (the channel id).
    pub index: u32,
    /// `series_identifier.series_type` (`bosdyn:channel`, ...).
    pub series_type: String,
    /// `series_identifier.spec`, sorted by key.
    pub spec: Vec<(String, String)>,
    /// `identifier_hash` as stored in the descriptor.
    pub identifier_hash: u64,
    /// Whether the stored hash (and the `FileIndex` copy, when there is one)
    /// equals the hash computed from the series type and spec.
    pub hash_ok: bool,
    /// Data type.
    pub kind: SeriesKind,
    /// Annotations, sorted by key.
    pub annotations: Vec<(String, String)>,
    /// Names of the additional index values every block carries.
    pub additional_index_names: Vec<String>,
    /// Free-text description.
    pub description: String,
    /// File offset of the series descriptor block.
    pub descriptor_offset: u64,
    /// Data blocks.
    pub block_count: u64,
    /// Payload bytes (`SeriesBlockIndex.total_bytes`, or summed by the scan).
    pub total_bytes: u64,
    /// Earliest block time.
    pub start_time: Option<Nanos>,
    /// Latest block time.
    pub end_time: Option<Nanos>,
    /// Whether block times never decrease in file order.
    pub monotonic: bool,
    /// The channel topic (see `series_topic`).
    pub topic: String,
    /// The channel message type (type name or `TYPE_FLOAT64[3]`).
    pub message_type: Option<String>,
}

impl Series {
    /// The POD element type and dimensions, for POD series of a known type.
    pub fn pod(&self) -> Option<(PodType, &[u32])> {
        match &self.kind {
            SeriesKind::Pod { pod_type, dims } => Some((PodType::from_enum(*pod_type)?, dims)),
            _ => None,
        }
    }

    /// `spec` as a JSON object text (keys sorted).
    pub(crate) fn spec_json(&self) -> String {
        let items: Vec<String> = self
            .spec
            .iter()
            .map(|(k, v)| format!("{}:{}", json_str(k), json_str(v)))
            .collect();
        format!("{{{}}}", items.join(","))
    }
}

/// JSON string literal of `s`.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The topic of a series: its `bosdyn:channel` spec value when it has one, else
/// `<series_type>:<k=v,...>` (keys sorted), or the bare series type when the
/// spec is empty.
pub(crate) fn series_topic(series_type: &str, spec: &[(String, String)]) -> String {
    if let Some((_, v)) = spec.iter().find(|(k, _)| k == "bosdyn:channel") {
        return v.clone();
    }
    if spec.is_empty() {
        return series_type.to_string();
    }
    let kv: Vec<String> = spec.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{series_type}:{}", kv.join(","))
}

/// The message type of a series: the type name, or the POD type with its
/// dimensions (`TYPE_FLOAT64[3]`, `TYPE_FLOAT32[4, 4]`, `TYPE_INT32`).
fn series_message_type(kind: &SeriesKind) -> Option<String> {
    match kind {
        SeriesKind::Message { type_name, .. } if !type_name.is_empty() => Some(type_name.clone()),
        SeriesKind::Pod { pod_type, dims } => {
            let name = pod_type_name(*pod_type);
            if dims.is_empty() {
                Some(name)
            } else {
                let d: Vec<String> = dims.iter().map(u32::to_string).collect();
                Some(format!("{name}[{}]", d.join(", ")))
            }
        }
        _ => None,
    }
}

/// One data block, as the index or the scan knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// File offset of the block header.
    pub offset: u64,
    /// Bytes from `offset` to the next known block (the block's size when the
    /// scan measured it).
    pub extent: u64,
    /// Block timestamp (ns).
    pub time: Nanos,
    /// Position of the block's series in [`BddfIndex::series`].
    pub series: u32,
    /// Position of the block within its series (0, 1, ...).
    pub seq: u64,
    /// Start of the block's additional index values in [`BddfIndex::aix`].
    pub(crate) aix_start: u64,
    /// Number of additional index values.
    pub(crate) aix_len: u32,
}

/// Reader-private facts about one chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkDetail {
    /// The chunk's blocks in [`BddfIndex::blocks`] (file order).
    pub blocks: Range<usize>,
    /// Per series position present: the chunk's blocks of that series (file order).
    pub series: Vec<(u32, Vec<usize>)>,
}

/// The trailer of a closed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// File offset of the end-block header (`file size - 40`).
    pub at: u64,
    /// Offset of the `FileIndex` block.
    pub index_offset: u64,
    /// The stored SHA1 of `file[0 .. at + 16]`.
    pub sha1: [u8; 20],
}

/// Reader-private BDDF data stored in [`Summary::private`].
#[derive(Debug, Clone, Default)]
pub struct BddfIndex {
    /// `major.minor.patch`.
    pub version: String,
    /// File annotations, sorted by key.
    pub annotations: Vec<(String, String)>,
    /// `checksum_type` of the file descriptor (2 = SHA1).
    pub checksum_type: i32,
    /// The trailer, when the file has a well-formed one.
    pub trailer: Option<Trailer>,
    /// Series in index order (position = channel order; see [`Series::index`]).
    pub series: Vec<Series>,
    /// Every data block, in file order.
    pub blocks: Vec<Block>,
    /// Additional index values of all blocks (see `Block::aix_start`).
    pub aix: Vec<i64>,
    /// One entry per [`Summary::chunks`] entry, same order.
    pub chunks: Vec<ChunkDetail>,
    /// How the block list was obtained (the `index` property).
    pub note: String,
}

impl BddfIndex {
    /// The additional index values of `block`, paired with its series' names
    /// (both of the same length).
    pub fn additional_indexes(&self, block: &Block) -> (&[String], &[i64]) {
        let Some(series) = self.series.get(block.series as usize) else {
            return (&[], &[]);
        };
        let n = series
            .additional_index_names
            .len()
            .min(block.aix_len as usize);
        let values = usize::try_from(block.aix_start)
            .ok()
            .and_then(|s| self.aix.get(s..s.checked_add(n)?))
            .unwrap_or(&[]);
        let n = values.len();
        (&series.additional_index_names[..n], values)
    }

    /// The series position named by `arg`: a topic, else a series index as text.
    pub(crate) fn find_series(&self, arg: &str) -> Option<usize> {
        if let Some(i) = self.series.iter().position(|s| s.topic == arg) {
            return Some(i);
        }
        let n: u32 = arg.trim().parse().ok()?;
        self.series.iter().position(|s| s.index == n)
    }
}

/// What the indexed path or the scan hands to [`finish`].
#[derive(Debug, Default)]
struct Parts {
    series: Vec<Series>,
    blocks: Vec<Block>,
    aix: Vec<i64>,
    /// Offsets of non-data blocks known from the index (for block extents).
    boundaries: Vec<u64>,
    indexed: bool,
    note: String,
}

/// The file descriptor block.
struct Header {
    version: String,
    annotations: Vec<(String, String)>,
    checksum_type: i32,
    /// Offset of the first block after the file descriptor.
    end: u64,
}

/// Builds the summary of a BDDF file (see the module documentation).
pub(crate) fn read_summary(file: &dyn ReadAt) -> Result<Summary> {
    let size = file.size();
    let ctx = ErrorContext::new(file.name(), "bddf", size);
    let head = file.read_upto(0, MAGIC.len()).map_err(|e| ctx.io(e))?;
    if head.as_slice() != MAGIC {
        if size == 0 {
            return Err(ctx.truncated(0, "empty file (0 bytes): no BDDF magic"));
        }
        if MAGIC.starts_with(&head) {
            return Err(ctx.truncated(
                0,
                format!("file of {size} bytes is too short for the BDDF magic"),
            ));
        }
        return Err(ctx.corrupt(
            0,
            format!(
                "not a BDDF file: expected \"BDDF\", found {}",
                hex_head(&head)
            ),
        ));
    }
    let header = match read_header(file, &ctx) {
        Ok(h) => h,
        Err(e @ Error::Truncated { .. }) => {
            // The file ends inside the file descriptor: nothing is readable.
            let mut s = finish(
                file,
                &ctx,
                Header {
                    version: String::new(),
                    annotations: Vec::new(),
                    checksum_type: 0,
                    end: MAGIC.len() as u64,
                },
                None,
                Parts {
                    note: "none: the file ends inside the file descriptor block".into(),
                    ..Parts::default()
                },
            );
            s.damage = Some(e);
            return Ok(s);
        }
        Err(e) => return Err(e),
    };
    let trailer = read_trailer(file, &ctx)?;
    let (parts, damage) = match trailer.map(|t| indexed(file, &ctx, &header, &t)) {
        Some(Ok(parts)) => (parts, None),
        Some(Err(reason)) => scan(file, &ctx, &header, trailer, Some(reason)),
        None => scan(file, &ctx, &header, None, None),
    };
    let mut summary = finish(file, &ctx, header, trailer, parts);
    summary.damage = damage;
    Ok(summary)
}

/// Reads the block header at `offset`: (type, size).
fn block_header_at(file: &dyn ReadAt, ctx: &ErrorContext, offset: u64) -> Result<(u8, u64)> {
    let mut b = [0u8; 8];
    if offset.checked_add(8).is_none_or(|e| e > file.size()) {
        return Err(ctx.truncated(offset, "block header of 8 bytes"));
    }
    file.read_exact_at(offset, &mut b).map_err(|e| ctx.io(e))?;
    Ok(split_header(u64::from_le_bytes(b)))
}

/// Reads the body of the descriptor block at `offset`, which must end by `limit`.
fn read_block_body(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>> {
    let (ty, size) = block_header_at(file, ctx, offset)?;
    if ty != DESCRIPTOR_BLOCK {
        return Err(ctx.corrupt(
            offset,
            format!("expected the {what} descriptor block (type 0x01), found block type {ty:#04x}"),
        ));
    }
    let end = (offset + 8).checked_add(size);
    if end.is_none_or(|e| e > limit) {
        if end.is_some_and(|e| e <= file.size()) {
            return Err(ctx.corrupt(
                offset,
                format!("{what} descriptor block of {size} bytes overlaps the next part of the file (ends by {limit})"),
            ));
        }
        return Err(ctx.truncated(
            offset,
            format!("{what} descriptor block of {size} bytes extends past the end of the file"),
        ));
    }
    file.read_vec(ctx, offset + 8, size, what)
}

/// Reads and decodes the descriptor block at `offset`, which must end by `limit`.
fn read_descriptor_block(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    limit: u64,
    what: &str,
) -> Result<proto::DescriptorBlock> {
    let body = read_block_body(file, ctx, offset, limit, what)?;
    proto::DescriptorBlock::decode(body.as_slice()).map_err(|e| undecodable(ctx, offset, what, e))
}

/// The error for a descriptor block at `offset` whose body does not decode.
fn undecodable(ctx: &ErrorContext, offset: u64, what: &str, e: prost::DecodeError) -> Error {
    ctx.corrupt(
        offset + 8,
        format!("{what} descriptor block does not decode: {e}"),
    )
}

/// Reads the file descriptor block at byte 4.
fn read_header(file: &dyn ReadAt, ctx: &ErrorContext) -> Result<Header> {
    let at = MAGIC.len() as u64;
    let (ty, size) = block_header_at(file, ctx, at)?;
    let end = (at + 8).saturating_add(size);
    let block = read_descriptor_block(file, ctx, at, file.size(), "file descriptor")?;
    let Some(proto::descriptor_block::DescriptorType::FileDescriptor(fd)) = block.descriptor_type
    else {
        return Err(ctx.corrupt(
            at,
            format!("the first block (type {ty:#04x}) is not a file descriptor"),
        ));
    };
    let v = fd.version.unwrap_or_default();
    if v.major_version != 1 {
        return Err(ctx.unsupported(
            at + 8,
            format!(
                "BDDF version {}.{}.{}: only version 1.x is supported",
                v.major_version, v.minor_version, v.patch_level
            ),
        ));
    }
    let mut annotations: Vec<(String, String)> = fd.annotations.into_iter().collect();
    annotations.sort();
    Ok(Header {
        version: format!("{}.{}.{}", v.major_version, v.minor_version, v.patch_level),
        annotations,
        checksum_type: fd.checksum_type,
        end,
    })
}

/// The trailer, when the file ends with a well-formed one (end-block header and `"FDDB"`).
fn read_trailer(file: &dyn ReadAt, ctx: &ErrorContext) -> Result<Option<Trailer>> {
    let size = file.size();
    let Some(at) = size.checked_sub(TRAILER_LEN) else {
        return Ok(None);
    };
    if at < MAGIC.len() as u64 {
        return Ok(None);
    }
    let mut b = [0u8; TRAILER_LEN as usize];
    file.read_exact_at(at, &mut b).map_err(|e| ctx.io(e))?;
    let (ty, _) = split_header(u64_at(&b, 0).unwrap_or_default());
    if ty != END_BLOCK || &b[36..40] != END_MAGIC {
        return Ok(None);
    }
    let mut sha1 = [0u8; 20];
    sha1.copy_from_slice(&b[16..36]);
    Ok(Some(Trailer {
        at,
        index_offset: u64_at(&b, 8).unwrap_or_default(),
        sha1,
    }))
}

/// Turns a descriptor into a [`Series`] (statistics still empty).
fn series_of(d: proto::SeriesDescriptor, descriptor_offset: u64) -> Series {
    let ident = d.series_identifier.unwrap_or_default();
    let mut spec: Vec<(String, String)> = ident.spec.into_iter().collect();
    spec.sort();
    let mut annotations: Vec<(String, String)> = d.annotations.into_iter().collect();
    annotations.sort();
    use proto::series_descriptor::DataType;
    let kind = match d.data_type {
        Some(DataType::MessageType(m)) => SeriesKind::Message {
            content_type: m.content_type,
            type_name: m.type_name,
            is_metadata: m.is_metadata,
        },
        Some(DataType::PodType(p)) => SeriesKind::Pod {
            pod_type: p.pod_type,
            dims: p.dimension,
        },
        Some(DataType::StructType(_)) => SeriesKind::Struct,
        None => SeriesKind::Unset,
    };
    let computed = identifier_hash(&ident.series_type, &spec);
    Series {
        index: d.series_index,
        topic: series_topic(&ident.series_type, &spec),
        message_type: series_message_type(&kind),
        series_type: ident.series_type,
        spec,
        identifier_hash: d.identifier_hash,
        hash_ok: computed == d.identifier_hash,
        kind,
        annotations,
        additional_index_names: d.additional_index_names,
        description: d.description,
        descriptor_offset,
        block_count: 0,
        total_bytes: 0,
        start_time: None,
        end_time: None,
        monotonic: true,
    }
}

/// The indexed path: trailer → `FileIndex` → `SeriesBlockIndex` and
/// `SeriesDescriptor` blocks. `Err` says why the index cannot be used.
fn indexed(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    header: &Header,
    t: &Trailer,
) -> std::result::Result<Parts, String> {
    use proto::descriptor_block::DescriptorType as D;
    let io = t.index_offset;
    if io < header.end || io.checked_add(8).is_none_or(|e| e > t.at) {
        return Err(format!(
            "the trailer's index offset {io} lies outside the blocks (bytes {}..{})",
            header.end, t.at
        ));
    }
    let block =
        read_descriptor_block(file, ctx, io, t.at, "file index").map_err(|e| e.to_string())?;
    let fi = match block.descriptor_type {
        Some(D::FileIndex(fi)) => fi,
        // The writer's index when no series was ever added: an empty block.
        None => proto::FileIndex::default(),
        Some(_) => {
            return Err(format!(
                "the descriptor block at the index offset {io} is not a file index"
            ));
        }
    };
    let n = fi.series_identifiers.len();
    if fi.series_block_index_offsets.len() != n
        || (!fi.series_identifier_hashes.is_empty() && fi.series_identifier_hashes.len() != n)
    {
        return Err(format!(
            "the file index at byte {io} lists {n} series identifiers but {} block index offsets and {} hashes",
            fi.series_block_index_offsets.len(),
            fi.series_identifier_hashes.len()
        ));
    }
    let mut parts = Parts {
        indexed: true,
        note: format!("FileIndex at byte {io}"),
        boundaries: vec![io],
        ..Parts::default()
    };
    let inside = |off: u64| off >= header.end && off < io;
    for (i, &sbi_off) in fi.series_block_index_offsets.iter().enumerate() {
        if !inside(sbi_off) {
            return Err(format!(
                "series {i}: block index offset {sbi_off} lies outside the blocks"
            ));
        }
        let what = "series block index";
        let body = read_block_body(file, ctx, sbi_off, io, what).map_err(|e| e.to_string())?;
        // The entries go straight into the block list; they are checked below,
        // after the fields that say whose they are.
        let pos = u32::try_from(parts.series.len()).map_err(|_| "too many series".to_string())?;
        let first_entry = parts.blocks.len();
        let decoded = block_index::decode(&body, &mut parts.aix, |e| {
            parts.blocks.push(Block {
                offset: e.file_offset,
                extent: 0,
                time: e.time,
                series: pos,
                seq: 0,
                aix_start: e.additional.start as u64,
                aix_len: u32::try_from(e.additional.len()).unwrap_or(u32::MAX),
            });
        });
        let sbi = match decoded {
            Ok(Some(head)) => head,
            Ok(None) => {
                return Err(format!(
                    "series {i}: the block at byte {sbi_off} is not a series block index"
                ));
            }
            Err(e) => return Err(undecodable(ctx, sbi_off, what, e).to_string()),
        };
        if sbi.series_index as usize != i {
            return Err(format!(
                "the series block index at byte {sbi_off} is for series {}, the file index says {i}",
                sbi.series_index
            ));
        }
        let d_off = sbi.descriptor_file_offset;
        if !inside(d_off) {
            return Err(format!(
                "series {i}: descriptor offset {d_off} lies outside the blocks"
            ));
        }
        let b = read_descriptor_block(file, ctx, d_off, io, "series descriptor")
            .map_err(|e| e.to_string())?;
        let Some(D::SeriesDescriptor(d)) = b.descriptor_type else {
            return Err(format!(
                "series {i}: the block at byte {d_off} is not a series descriptor"
            ));
        };
        if d.series_index as usize != i {
            return Err(format!(
                "the series descriptor at byte {d_off} is for series {}, expected {i}",
                d.series_index
            ));
        }
        let mut s = series_of(d, d_off);
        if fi
            .series_identifier_hashes
            .get(i)
            .is_some_and(|h| *h != s.identifier_hash)
        {
            s.hash_ok = false;
        }
        s.total_bytes = sbi.total_bytes;
        parts.boundaries.push(sbi_off);
        parts.boundaries.push(d_off);
        if let Some(b) = parts.blocks[first_entry..].iter().find(|b| {
            b.offset < header.end || b.offset.checked_add(DATA_HEAD).is_none_or(|x| x > io)
        }) {
            return Err(format!(
                "series {i}: block entry offset {} lies outside the data blocks",
                b.offset
            ));
        }
        parts.series.push(s);
    }
    // Each data block reaches to the next block the index knows of.
    parts.blocks.sort_by_key(|b| b.offset);
    parts.boundaries.sort_unstable();
    for w in parts.blocks.windows(2) {
        if w[0].offset == w[1].offset {
            return Err(format!(
                "two block entries point at the same offset {}",
                w[0].offset
            ));
        }
    }
    let n_blocks = parts.blocks.len();
    for k in 0..n_blocks {
        let off = parts.blocks[k].offset;
        let b = parts.boundaries.partition_point(|&x| x <= off);
        if parts.boundaries.get(b.wrapping_sub(1)) == Some(&off) {
            return Err(format!(
                "a block entry points at byte {off}, where a descriptor block lies"
            ));
        }
        let mut next = parts.boundaries.get(b).copied().unwrap_or(io);
        if let Some(nb) = parts.blocks.get(k + 1) {
            next = next.min(nb.offset);
        }
        let extent = next - off;
        if extent < DATA_HEAD {
            return Err(format!(
                "the block entry at byte {off} overlaps the next block at byte {next}"
            ));
        }
        parts.blocks[k].extent = extent;
    }
    Ok(parts)
}

/// The scan: walks blocks from the first one after the file descriptor.
/// Returns what it found and, when it did not end at an end block, why it stopped.
fn scan(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    header: &Header,
    trailer: Option<Trailer>,
    reason: Option<String>,
) -> (Parts, Option<Error>) {
    use proto::descriptor_block::DescriptorType as D;
    let size = file.size();
    let mut parts = Parts::default();
    let mut positions: HashMap<u32, u32> = HashMap::new();
    let mut duplicates = 0usize;
    let mut saw_index = false;
    let mut r = SequentialReader::new(file, header.end);
    let damage = loop {
        let pos = r.position();
        let left = size.saturating_sub(pos);
        if left == 0 {
            break Some(ctx.truncated(
                pos,
                if saw_index {
                    "the file ends after the index blocks, without the 40-byte trailer \
                     (index offset, SHA1, \"FDDB\"): it was cut there"
                } else {
                    "the file ends after the last complete data block, without the index \
                     and the trailer: the recording was not closed, or the file was cut there"
                },
            ));
        }
        let hdr = match r.take(8) {
            Ok(Some(b)) => u64_at(b, 0).unwrap_or_default(),
            Ok(None) => {
                break Some(ctx.truncated(
                    pos,
                    format!("block header of 8 bytes: only {left} bytes left; the file was cut inside it"),
                ));
            }
            Err(e) => break Some(ctx.io(e)),
        };
        let (ty, sz) = split_header(hdr);
        match ty {
            DATA_BLOCK => {
                let total = DATA_HEAD + sz;
                if total > left {
                    break Some(ctx.truncated(
                        pos,
                        format!("data block of {total} bytes (only {left} left): the file was cut inside it"),
                    ));
                }
                let ds = match r.take(4) {
                    Ok(Some(b)) => u64::from(u32_at(b, 0).unwrap_or_default()),
                    Ok(None) => break Some(ctx.truncated(pos, "data descriptor size")),
                    Err(e) => break Some(ctx.io(e)),
                };
                if ds > sz {
                    break Some(ctx.corrupt(
                        pos,
                        format!(
                            "data block of {sz} bytes declares a data descriptor of {ds} bytes"
                        ),
                    ));
                }
                let decoded = match r.take(ds as usize) {
                    Ok(Some(b)) => proto::DataDescriptor::decode(b),
                    Ok(None) => break Some(ctx.truncated(pos, "data descriptor")),
                    Err(e) => break Some(ctx.io(e)),
                };
                let d = match decoded {
                    Ok(d) => d,
                    Err(e) => {
                        break Some(ctx.corrupt(
                            pos + DATA_HEAD,
                            format!("data descriptor does not decode: {e}"),
                        ));
                    }
                };
                let Some(&spos) = positions.get(&d.series_index) else {
                    break Some(ctx.corrupt(
                        pos,
                        format!(
                            "data block of series {} comes before any descriptor of that series",
                            d.series_index
                        ),
                    ));
                };
                if let Some(s) = parts.series.get_mut(spos as usize) {
                    s.total_bytes = s.total_bytes.saturating_add(sz - ds);
                }
                let aix_start = parts.aix.len() as u64;
                let aix_len = u32::try_from(d.additional_indexes.len()).unwrap_or(u32::MAX);
                parts.aix.extend(d.additional_indexes);
                parts.blocks.push(Block {
                    offset: pos,
                    extent: total,
                    time: timestamp_ns(d.timestamp.as_ref()),
                    series: spos,
                    seq: 0,
                    aix_start,
                    aix_len,
                });
                r.seek(pos + total);
            }
            DESCRIPTOR_BLOCK => {
                let total = 8 + sz;
                if total > left {
                    break Some(ctx.truncated(
                        pos,
                        format!("descriptor block of {total} bytes (only {left} left): the file was cut inside it"),
                    ));
                }
                let decoded = match r.take(sz as usize) {
                    Ok(Some(b)) => proto::DescriptorBlock::decode(b),
                    Ok(None) => break Some(ctx.truncated(pos, "descriptor block")),
                    Err(e) => break Some(ctx.io(e)),
                };
                match decoded.map(|b| b.descriptor_type) {
                    Ok(Some(D::SeriesDescriptor(d))) => {
                        let spos = parts.series.len() as u32;
                        match positions.entry(d.series_index) {
                            Entry::Occupied(_) => duplicates += 1,
                            Entry::Vacant(v) => {
                                v.insert(spos);
                                parts.series.push(series_of(d, pos));
                            }
                        }
                    }
                    Ok(Some(D::SeriesBlockIndex(_) | D::FileIndex(_)) | None) => saw_index = true,
                    Ok(Some(D::FileDescriptor(_))) => {}
                    Err(e) => {
                        break Some(
                            ctx.corrupt(pos + 8, format!("descriptor block does not decode: {e}")),
                        );
                    }
                }
            }
            END_BLOCK => {
                // A whole trailer ends the file; anything else is a cut or damaged tail.
                if trailer.is_some_and(|t| t.at == pos) {
                    break None;
                }
                if left < TRAILER_LEN {
                    break Some(ctx.truncated(
                        pos,
                        format!("trailer of {TRAILER_LEN} bytes (only {left} left): the file was cut inside it"),
                    ));
                }
                break Some(ctx.corrupt(
                    pos,
                    format!("end block followed by {left} bytes where the 40-byte trailer ending in \"FDDB\" belongs"),
                ));
            }
            _ => {
                break Some(ctx.corrupt(
                    pos,
                    format!("unknown block type {ty:#04x} (block header {hdr:#018x})"),
                ));
            }
        }
    };
    let mut note = match (&reason, trailer) {
        (Some(r), _) => format!("unusable ({r}); blocks scanned instead"),
        (None, Some(_)) => "blocks scanned".to_string(),
        (None, None) => "none (no trailer); blocks scanned instead".to_string(),
    };
    if duplicates > 0 {
        note.push_str(&format!(
            "; {duplicates} repeated series descriptor(s) ignored"
        ));
    }
    parts.note = note;
    (parts, damage)
}

/// Assembles the summary: per-series statistics, chunks, channels, properties.
fn finish(
    file: &dyn ReadAt,
    _ctx: &ErrorContext,
    header: Header,
    trailer: Option<Trailer>,
    parts: Parts,
) -> Summary {
    let Parts {
        mut series,
        mut blocks,
        aix,
        indexed,
        note,
        ..
    } = parts;
    let mut last: Vec<Option<Nanos>> = vec![None; series.len()];
    for b in &mut blocks {
        let Some(s) = series.get_mut(b.series as usize) else {
            continue;
        };
        b.seq = s.block_count;
        s.block_count += 1;
        s.start_time = Some(s.start_time.map_or(b.time, |t| t.min(b.time)));
        s.end_time = Some(s.end_time.map_or(b.time, |t| t.max(b.time)));
        if let Some(prev) = last.get_mut(b.series as usize) {
            if prev.is_some_and(|p| b.time < p) {
                s.monotonic = false;
            }
            *prev = Some(b.time);
        }
    }
    let (chunks, details) = make_chunks(&series, &blocks);
    let mut channels = BTreeMap::new();
    let mut counts = BTreeMap::new();
    for s in &series {
        let id = u64::from(s.index);
        channels.insert(id, channel_of(s));
        counts.insert(id, s.block_count);
    }
    let start_time = blocks.iter().map(|b| b.time).min();
    let end_time = blocks.iter().map(|b| b.time).max();
    let mut properties = vec![("version".to_string(), header.version.clone())];
    for (k, v) in &header.annotations {
        properties.push((format!("annotation:{k}"), v.clone()));
    }
    properties.push((
        "checksum_type".to_string(),
        proto::file_format_descriptor::CheckSumType::try_from(header.checksum_type)
            .map(|t| {
                t.as_str_name()
                    .trim_start_matches("CHECKSUM_TYPE_")
                    .to_string()
            })
            .unwrap_or_else(|_| header.checksum_type.to_string()),
    ));
    if let Some(t) = &trailer {
        properties.push(("index_offset".to_string(), t.index_offset.to_string()));
        properties.push(("sha1".to_string(), hex(&t.sha1)));
    }
    properties.push(("series".to_string(), series.len().to_string()));
    properties.push(("blocks".to_string(), blocks.len().to_string()));
    properties.push(("index".to_string(), note.clone()));
    let metadata = if header.annotations.is_empty() {
        Vec::new()
    } else {
        vec![MetadataInfo {
            offset: Some(MAGIC.len() as u64),
            name: "annotations".to_string(),
            metadata: header.annotations.iter().cloned().collect(),
        }]
    };
    let index = BddfIndex {
        version: header.version,
        annotations: header.annotations,
        checksum_type: header.checksum_type,
        trailer,
        series,
        aix,
        chunks: details,
        note,
        blocks,
    };
    Summary {
        format: "bddf",
        file_size: file.size(),
        channels,
        chunks,
        indexed,
        message_count: Some(index.blocks.len() as u64),
        channel_message_counts: Some(counts),
        start_time,
        end_time,
        attachments: Vec::new(),
        metadata,
        properties,
        damage: None,
        private: Some(Arc::new(index)),
    }
}

/// Groups consecutive blocks into chunks of about [`CHUNK_TARGET`] bytes.
fn make_chunks(series: &[Series], blocks: &[Block]) -> (Vec<ChunkMeta>, Vec<ChunkDetail>) {
    let mut chunks = Vec::new();
    let mut details = Vec::new();
    let mut i = 0;
    while i < blocks.len() {
        let start = i;
        let mut bytes = 0u64;
        while let Some(b) = blocks.get(i) {
            if i > start
                && (bytes.saturating_add(b.extent) > CHUNK_TARGET || i - start >= CHUNK_MAX_BLOCKS)
            {
                break;
            }
            bytes = bytes.saturating_add(b.extent);
            i += 1;
        }
        let run = &blocks[start..i];
        let first = run[0].offset;
        let end = run
            .last()
            .map_or(first, |b| b.offset.saturating_add(b.extent));
        let mut per: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (k, b) in run.iter().enumerate() {
            per.entry(b.series).or_default().push(start + k);
        }
        let mut ids: Vec<u64> = per
            .keys()
            .filter_map(|p| series.get(*p as usize))
            .map(|s| u64::from(s.index))
            .collect();
        ids.sort_unstable();
        chunks.push(ChunkMeta {
            index: chunks.len(),
            offset: first,
            length: end - first,
            start_time: run.iter().map(|b| b.time).min(),
            end_time: run.iter().map(|b| b.time).max(),
            message_count: Some(run.len() as u64),
            channels: Some(ids),
            compression: String::new(),
            compressed_size: end - first,
            uncompressed_size: Some(end - first),
        });
        details.push(ChunkDetail {
            blocks: start..i,
            series: per.into_iter().collect(),
        });
    }
    (chunks, details)
}

/// The channel of a series.
fn channel_of(s: &Series) -> Channel {
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        m.insert(k.to_string(), v);
    };
    put("series_index", s.index.to_string());
    put("series_type", s.series_type.clone());
    put("spec", s.spec_json());
    put("identifier_hash", format!("{:#018x}", s.identifier_hash));
    put("hash_ok", s.hash_ok.to_string());
    put("additional_index_names", s.additional_index_names.join(","));
    put("block_count", s.block_count.to_string());
    put("total_bytes", s.total_bytes.to_string());
    put("monotonic", s.monotonic.to_string());
    if !s.description.is_empty() {
        put("description", s.description.clone());
    }
    let encoding = match &s.kind {
        SeriesKind::Message {
            content_type,
            type_name,
            is_metadata,
        } => {
            put("content_type", content_type.clone());
            put("type_name", type_name.clone());
            put("is_metadata", is_metadata.to_string());
            if content_type == "application/protobuf" {
                "protobuf".to_string()
            } else {
                content_type.clone()
            }
        }
        SeriesKind::Pod { pod_type, dims } => {
            put("pod_type", pod_type_name(*pod_type));
            put(
                "dimensions",
                dims.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
            "pod".to_string()
        }
        SeriesKind::Struct => "struct".to_string(),
        SeriesKind::Unset => String::new(),
    };
    for (k, v) in &s.annotations {
        m.insert(format!("annotation:{k}"), v.clone());
    }
    Channel {
        id: u64::from(s.index),
        topic: s.topic.clone(),
        message_type: s.message_type.clone(),
        message_encoding: encoding,
        schema_encoding: None,
        schema: None,
        metadata: m,
    }
}
