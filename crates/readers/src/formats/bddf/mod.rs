//! Boston Dynamics Data Format (BDDF, Spot data-buffer downloads): the
//! byte-level reader (no DataFusion, no Arrow).
//!
//! A file is `"BDDF"`, a file-descriptor block, then data blocks and series
//! descriptor blocks in write order, one `SeriesBlockIndex` block per series, a
//! `FileIndex` block, and a 40-byte trailer (end header, index offset, SHA1 of
//! everything before the digest, `"FDDB"`). Block header: one little-endian
//! u64, type in the top 8 bits (0x00 data, 0x01 descriptor, 0x02 end), size in
//! the low 56 bits; a data block's size does not count its 4-byte descriptor
//! size field. The framing messages are in `proto/bddf/bddf.proto`.
//!
//! [`BddfFormat`] implements [`FormatReader`]:
//!
//! - [`FormatReader::summary`] reads the file descriptor, the trailer, the
//!   `FileIndex` and, per series, its `SeriesBlockIndex` and `SeriesDescriptor`
//!   (no data block). One [`Channel`](crate::model::Channel) per series: id =
//!   series index; topic = the `bosdyn:channel` spec value, else
//!   `<series_type>:<k=v,...>` (keys sorted); `message_type` = the type name or
//!   the POD type (`TYPE_FLOAT64[3]`); `message_encoding` = `protobuf`
//!   (content type `application/protobuf`), `pod`, or the content type; no
//!   schema (BDDF stores none). Metadata: `series_index`, `series_type`, `spec`
//!   (JSON object), `identifier_hash` (hex), `hash_ok`, `content_type`,
//!   `type_name`, `is_metadata` (message series), `pod_type`, `dimensions`
//!   (comma-separated; POD series), `additional_index_names`
//!   (comma-separated), `block_count`, `total_bytes`, `monotonic`,
//!   `description` (when set), and `annotation:<key>` per annotation. Chunks
//!   group consecutive data blocks of up to 2 MiB. A file without a usable
//!   trailer or index is scanned block by block (see [`index`]); a cut file's
//!   complete blocks stay readable and the cut becomes
//!   [`Summary::damage`](crate::model::Summary::damage).
//! - [`FormatReader::read_chunk`] reads only the selected blocks (series by topic,
//!   time by binary search when the series is sorted); one message per data
//!   block: `log_time` = block timestamp, `data` = payload, extra column
//!   `additional_indexes` (map name → int64). Reads that need no payloads are
//!   answered from the index without reading blocks (BDDF has no publish time
//!   or sequence).
//! - [`FormatReader::verify`]: SHA1 over `file[0 .. len-24]`, streamed.
//! - Typed tables `series` (one row per series) and `pod` (one row per POD
//!   sample of the series given as argument).

use crate::error::{ErrorContext, Result};
use crate::io::ReadAt;
use crate::model::{
    ChunkMeta, ChunkRead, ExtraColumn, ExtraKind, MessageReceiver, Selection, Summary,
};
use crate::table::{RowReceiver, TableDef};

use super::{FileDigest, FormatReader, TypedTable};
use sha1::{Digest, Sha1};

mod block_index;
pub mod index;
mod read;

pub use index::{BddfIndex, Block, ChunkDetail, MAGIC, Series, SeriesKind, identifier_hash};

/// The BDDF framing messages (package `bosdyn.api`), generated from `proto/bddf/`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/bosdyn.api.rs"));
}

/// Bytes hashed per read by [`FormatReader::verify`].
/// The extra `messages` columns.
const EXTRA: &[ExtraColumn] = &[ExtraColumn {
    name: "additional_indexes",
    kind: ExtraKind::Int64Map,
    doc: "the block's additional index values by name (the series' additional_index_names); null when the series has none",
}];

/// The BDDF format.
#[derive(Debug, Clone, Copy, Default)]
pub struct BddfFormat;

fn context(file: &dyn ReadAt) -> ErrorContext {
    ErrorContext::new(file.name(), "bddf", file.size())
}

impl FormatReader for BddfFormat {
    fn chunk_times_enclose_messages(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "bddf"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["bddf"]
    }

    fn sniff(&self, head: &[u8]) -> bool {
        head.starts_with(MAGIC)
    }

    fn summary_with_limits(
        &self,
        file: &dyn ReadAt,
        _limits: &crate::limits::Limits,
    ) -> Result<Summary> {
        index::read_summary(file)
    }

    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        sel: &Selection,
        receiver: &mut dyn MessageReceiver,
    ) -> Result<ChunkRead> {
        read::read_messages(file, &context(file), summary, chunk, sel, receiver)
    }

    fn extra_columns(&self) -> &'static [ExtraColumn] {
        EXTRA
    }

    fn tables(&self) -> &'static [&'static dyn TypedTable] {
        &[&SeriesTable, &PodTable]
    }

    fn file_digest(&self, file: &dyn ReadAt, summary: &Summary) -> Option<Box<dyn FileDigest>> {
        let index = summary.private::<BddfIndex>()?;
        let trailer = index.trailer?;
        if index.checksum_type == index::CHECKSUM_NONE {
            return None;
        }
        Some(Box::new(Sha1Digest {
            ctx: context(file),
            trailer,
            hasher: Sha1::new(),
        }))
    }
}

/// `series`: one row per series of the file (a whole-file table).
#[derive(Debug)]
struct SeriesTable;

impl TypedTable for SeriesTable {
    fn name(&self) -> &'static str {
        "series"
    }

    fn def(&self, _summary: &Summary, _arg: Option<&str>) -> Result<TableDef> {
        Ok(read::series_table())
    }

    fn read_file(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        _arg: Option<&str>,
        receiver: &mut dyn RowReceiver,
    ) -> Result<()> {
        read::read_series_table(read::index_of(summary, &context(file))?, receiver);
        Ok(())
    }
}

/// `pod`: the samples of one series of plain-old-data values, per chunk.
#[derive(Debug)]
struct PodTable;

impl TypedTable for PodTable {
    fn name(&self) -> &'static str {
        "pod"
    }

    fn def(&self, summary: &Summary, arg: Option<&str>) -> Result<TableDef> {
        let ctx = ErrorContext::new("", "bddf", summary.file_size);
        read::pod_table(read::index_of(summary, &ctx)?, &ctx, arg)
    }

    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        arg: Option<&str>,
        sel: &Selection,
        receiver: &mut dyn RowReceiver,
    ) -> Result<ChunkRead> {
        read::read_pod_chunk(file, &context(file), summary, chunk, arg, sel, receiver)
    }
}

/// The SHA1 over `file[0 .. trailer.at + 16]` (everything before the stored
/// digest), compared with the stored digest.
struct Sha1Digest {
    ctx: ErrorContext,
    trailer: index::Trailer,
    hasher: Sha1,
}

impl FileDigest for Sha1Digest {
    fn end(&self) -> u64 {
        self.trailer.at + 16
    }

    fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
    }

    fn finish(self: Box<Self>) -> Result<()> {
        let end = self.end();
        let computed: [u8; 20] = self.hasher.finalize().into();
        if computed == self.trailer.sha1 {
            Ok(())
        } else {
            Err(self.ctx.digest_mismatch(
                end,
                format!("sha1 over file[0..{end}]"),
                index::hex(&self.trailer.sha1),
                index::hex(&computed),
            ))
        }
    }
}
