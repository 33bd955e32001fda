//! Building a [`Summary`] for an MCAP file: footer, summary section, fallbacks.
//!
//! This module owns the decision "can the file's own index be trusted?" and the
//! assembly of the final [`Summary`]:
//!
//! 1. **Indexed path.** Read the last 37 bytes (Footer + magic), then the summary
//!    section; check `summary_crc` when it is not 0; collect Schema, Channel,
//!    ChunkIndex, AttachmentIndex, MetadataIndex and Statistics records. Check that
//!    the chunk index fits the file, then walk the *gaps* it leaves in the data
//!    section (the Header, loose messages beside chunks, unindexed chunks,
//!    attachments, metadata, DataEnd) with the same walker as the fallback, so
//!    nothing outside the indexed chunks is lost. Usually the gaps are empty or
//!    hold a few small records, so this costs a couple of small reads.
//! 2. **Fallback walk** when there is no footer, no summary, no chunk index, a
//!    checksum mismatch, a damaged summary, or an index that does not match the
//!    data: one bounded-memory pass over the top-level records (see [`super::walk`]).
//!    Damage ends the walk; everything before it is listed and the error goes in
//!    [`Summary::damage`].
//!    A summary section that checks out but has no ChunkIndex (unchunked
//!    writers) still supplies its statistics, channels and attachment/metadata
//!    indexes to the walk. The `index` property says which path was taken and why.
//! 3. **Channel discovery.** When chunks use channel ids that no Channel record
//!    outside the chunks defines (or when the walk cannot tell which channels an
//!    unindexed chunk uses and no summary vouches for the channel list), the
//!    chunks concerned are opened, in file order, to read their Schema and Channel
//!    records. Ids defined nowhere get a synthetic channel (empty topic). For a
//!    summary-less file whose chunks have no message indexes this is one extra
//!    decompression pass, the price of knowing every topic before reading.
//!
//! Per-chunk message counts and channel ids of indexed chunks are derived from
//! the layout of their MessageIndex records (see `message_index_counts`) without
//! reading them; the walk reads them (they are small) and drops what they said
//! about a chunk whose index records were cut short by damage.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::chunk;
use super::index::{ChannelDef, ChunkDetail, ChunkKind, McapIndex, SchemaInfo, synthetic_channel};
use super::records::{
    self, FOOTER_AND_MAGIC_LEN, FOOTER_CONTENT_LEN, MAGIC, RECORD_PREFIX_LEN, SliceRecords, op,
};
use super::walk::{MiTarget, Stop, Walker};
use crate::error::{Error, ErrorContext, Result, hex_head};
use crate::io::ReadAt;
use crate::model::{AttachmentInfo, ChunkMeta, MetadataInfo, Summary};

/// Why the indexed path gave up, for the `index` property and for damage reporting.
#[derive(Debug)]
struct Fallback {
    reason: String,
    error: Option<Error>,
    /// The summary section, when it was read and checked but cannot index the
    /// chunks (it has no ChunkIndex): its statistics, channels and indexes are
    /// still trustworthy and complete the walk.
    section: Option<Box<Section>>,
}

/// The trustworthy content of a summary section that has no chunk index.
#[derive(Debug)]
struct Section {
    schemas: BTreeMap<u16, SchemaInfo>,
    channels: BTreeMap<u16, ChannelDef>,
    extras: Extras,
    metadata_indexes: Vec<(u64, u64, String)>,
}

impl Fallback {
    fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            error: None,
            section: None,
        }
    }

    fn with_error(reason: impl Into<String>, error: Error) -> Self {
        Self {
            reason: reason.into(),
            error: Some(error),
            section: None,
        }
    }
}

/// The Statistics record, owned.
#[derive(Debug, Clone)]
struct Stats {
    message_count: u64,
    channel_count: u32,
    start: u64,
    end: u64,
    channel_message_counts: BTreeMap<u64, u64>,
}

/// What the summary section held besides channels and chunks.
#[derive(Debug, Default)]
struct Extras {
    stats: Option<Stats>,
    attachments: Vec<AttachmentInfo>,
    metadata: Vec<MetadataInfo>,
    indexed: bool,
    index_note: String,
    /// Whether Channel records came from a checked summary section (so a chunk
    /// without message indexes may be assumed to use only those channels).
    summary_channels: bool,
}

/// Builds the summary of an MCAP file (see the module documentation).
/// Chunks it decompresses (a recovery scan) are bounded by `limits`.
pub(crate) fn read_summary(file: &dyn ReadAt, limits: &crate::limits::Limits) -> Result<Summary> {
    let size = file.size();
    let ctx = ErrorContext::new(file.name(), "mcap", size).with_limits(*limits);
    let head = file.read_upto(0, MAGIC.len()).map_err(|e| ctx.io(e))?;
    if head.len() < MAGIC.len() {
        return Err(ctx.truncated(
            0,
            format!("file of {size} bytes is too short for the MCAP magic"),
        ));
    }
    if head.as_slice() != MAGIC {
        return Err(ctx.corrupt(
            0,
            format!(
                "not an MCAP file: expected magic {}, found {}",
                hex_head(MAGIC),
                hex_head(&head)
            ),
        ));
    }
    match indexed(file, &ctx) {
        Ok(summary) => Ok(summary),
        Err(fallback) => walked(file, &ctx, fallback),
    }
}

/// The fallback: walk the whole file.
fn walked(file: &dyn ReadAt, ctx: &ErrorContext, fallback: Fallback) -> Result<Summary> {
    let size = file.size();
    let mut w = Walker::new(file, ctx);
    let stop = w.walk(MAGIC.len() as u64, size);
    if matches!(stop, Ok(Stop::End)) {
        // The file may have been cut between two MessageIndex records of its
        // last chunk: a partial list would under-count the header-only read.
        w.drop_open_message_indexes();
    }
    let damage = match stop {
        Ok(Stop::DataEnd { end, .. }) => {
            w.walk_summary_section(end, size);
            None
        }
        Ok(Stop::Footer(_)) => None,
        Ok(Stop::End) => Some(ctx.truncated(size, "file ends without a DataEnd or Footer record")),
        Err(e) => Some(e),
    };
    let index_note = match &fallback.error {
        Some(e) => format!("rebuilt by walking the file ({}: {e})", fallback.reason),
        None => format!("rebuilt by walking the file ({})", fallback.reason),
    };
    let extras = match fallback.section {
        Some(section) => {
            // A checked summary without chunk indexes: keep what it says.
            let section = *section;
            for (id, s) in section.schemas {
                w.schemas.entry(id).or_insert(s);
            }
            for (id, c) in section.channels {
                w.channels.entry(id).or_insert(c);
            }
            let mut extras = section.extras;
            read_indexed_metadata(file, ctx, &w, &mut extras, section.metadata_indexes);
            if damage.is_some() {
                // The statistics describe the whole file, not the readable part.
                extras.stats = None;
            }
            Extras {
                index_note,
                ..extras
            }
        }
        None => Extras {
            index_note,
            ..Extras::default()
        },
    };
    let mut summary = finish(file, ctx, w, extras);
    // A damaged summary (e.g. a checksum mismatch) is not itself reported as
    // damage: the walk replaced it, and the `index` property says why. Damage is
    // what the walk could not read.
    summary.damage = damage;
    Ok(summary)
}

/// The indexed path; `Err` says why the file must be walked instead.
// Called once per file; the fallback carries the reason and the summary section.
#[allow(clippy::result_large_err)]
fn indexed(file: &dyn ReadAt, ctx: &ErrorContext) -> Result<Summary, Fallback> {
    let size = file.size();
    let magic_len = MAGIC.len() as u64;
    if size < magic_len + FOOTER_AND_MAGIC_LEN {
        return Err(Fallback::new("file too short for a footer"));
    }
    let footer_at = size - FOOTER_AND_MAGIC_LEN;
    let tail = file
        .read_vec(ctx, footer_at, FOOTER_AND_MAGIC_LEN, "footer")
        .map_err(|e| Fallback::with_error("cannot read the footer", e))?;
    let (opcode, len) = super::walk::prefix_fields(&tail);
    if tail.get(tail.len() - MAGIC.len()..) != Some(&MAGIC[..]) {
        return Err(Fallback::new(
            "no closing magic: the file is truncated or still being written",
        ));
    }
    if opcode != op::FOOTER || len != FOOTER_CONTENT_LEN {
        return Err(Fallback::new("no Footer record before the closing magic"));
    }
    let footer = records::parse_footer(tail.get(RECORD_PREFIX_LEN as usize..).unwrap_or(&[]))
        .map_err(|e| Fallback::new(format!("bad footer: {e}")))?;
    if footer.summary_start == 0 {
        return Err(Fallback::new("no summary section"));
    }
    if footer.summary_start < magic_len || footer.summary_start > footer_at {
        return Err(Fallback::new(format!(
            "footer's summary_start {} lies outside the file",
            footer.summary_start
        )));
    }
    // The CRC covers the summary, the summary offsets and the footer up to its CRC field.
    let crc_end = footer_at + RECORD_PREFIX_LEN + 16;
    let bytes = file
        .read_vec(
            ctx,
            footer.summary_start,
            crc_end - footer.summary_start,
            "summary section",
        )
        .map_err(|e| Fallback::with_error("cannot read the summary section", e))?;
    if footer.summary_crc != 0 {
        let computed = crc32fast::hash(&bytes);
        if computed != footer.summary_crc {
            let e = ctx.checksum(
                footer_at,
                "summary_crc",
                u64::from(footer.summary_crc),
                u64::from(computed),
            );
            return Err(Fallback::with_error("summary checksum mismatch", e));
        }
    }
    let section = bytes
        .get(..(footer_at - footer.summary_start) as usize)
        .unwrap_or(&[]);

    let mut schemas: BTreeMap<u16, SchemaInfo> = BTreeMap::new();
    let mut channels: BTreeMap<u16, ChannelDef> = BTreeMap::new();
    let mut chunks: Vec<(ChunkMeta, ChunkDetail)> = Vec::new();
    let mut extras = Extras {
        indexed: true,
        index_note: "summary".into(),
        ..Extras::default()
    };
    let mut metadata_indexes: Vec<(u64, u64, String)> = Vec::new();
    for rec in SliceRecords::new(section) {
        let at = |pos: usize| footer.summary_start + pos as u64;
        let rec = rec.map_err(|e| {
            Fallback::with_error(
                "damaged summary section",
                ctx.corrupt(at(e.pos), format!("summary section: {}", e.message)),
            )
        })?;
        let bad = |e: records::FieldError| {
            let offset = at(rec.pos) + RECORD_PREFIX_LEN + e.pos as u64;
            Fallback::with_error(
                "damaged summary section",
                ctx.corrupt(
                    offset,
                    format!(
                        "bad {} record in the summary: {}",
                        op::name(rec.opcode),
                        e.message
                    ),
                ),
            )
        };
        match rec.opcode {
            op::SCHEMA => {
                let s = records::parse_schema(rec.content).map_err(bad)?;
                if s.id != 0 {
                    schemas
                        .entry(s.id)
                        .or_insert_with(|| SchemaInfo::from_record(&s));
                }
            }
            op::CHANNEL => {
                let c = records::parse_channel(rec.content).map_err(bad)?;
                channels
                    .entry(c.id)
                    .or_insert_with(|| ChannelDef::from_record(&c));
            }
            op::CHUNK_INDEX => {
                let ci = records::parse_chunk_index(rec.content).map_err(bad)?;
                chunks.push(chunk_from_index(&ci));
            }
            op::ATTACHMENT_INDEX => {
                let a = records::parse_attachment_index(rec.content).map_err(bad)?;
                extras.attachments.push(AttachmentInfo {
                    offset: a.offset,
                    length: a.length,
                    name: a.name.to_string(),
                    media_type: a.media_type.to_string(),
                    log_time: a.log_time,
                    create_time: a.create_time,
                    data_size: a.data_size,
                });
            }
            op::METADATA_INDEX => {
                let m = records::parse_metadata_index(rec.content).map_err(bad)?;
                metadata_indexes.push((m.offset, m.length, m.name.to_string()));
            }
            op::STATISTICS => {
                let s = records::parse_statistics(rec.content).map_err(bad)?;
                extras.stats.get_or_insert(Stats {
                    message_count: s.message_count,
                    channel_count: s.channel_count,
                    start: s.message_start_time,
                    end: s.message_end_time,
                    channel_message_counts: s
                        .channel_message_counts
                        .iter()
                        .map(|(k, v)| (u64::from(k), v))
                        .collect(),
                });
            }
            _ => {}
        }
    }
    extras.summary_channels = !channels.is_empty();
    if chunks.is_empty() {
        let mut fallback = Fallback::new("the summary has no chunk index");
        extras.indexed = false;
        fallback.section = Some(Box::new(Section {
            schemas,
            channels,
            extras,
            metadata_indexes,
        }));
        return Err(fallback);
    }
    chunks.sort_by_key(|(m, _)| m.offset);
    // The indexed chunks (with their message indexes) must lie in the data section without overlapping.
    let data_limit = footer.summary_start;
    let mut cursor = magic_len;
    for (meta, detail) in &chunks {
        let end = meta
            .offset
            .checked_add(meta.length)
            .and_then(|e| e.checked_add(detail.message_index_length));
        match end {
            Some(end)
                if meta.offset >= cursor
                    && meta.length >= RECORD_PREFIX_LEN
                    && end <= data_limit =>
            {
                cursor = end
            }
            _ => {
                return Err(Fallback::new(format!(
                    "the chunk index does not fit the file (chunk at byte {} of {} bytes)",
                    meta.offset, meta.length
                )));
            }
        }
    }

    // Walk the gaps the index leaves in the data section.
    let mut w = Walker::new(file, ctx);
    w.chunks = chunks;
    let mut gap_start = magic_len;
    let mut previous: Option<MiTarget> = None;
    let ranges: Vec<(u64, u64, u64, bool)> = w
        .chunks
        .iter()
        .map(|(m, d)| {
            (
                m.offset,
                m.offset + m.length,
                m.offset + m.length + d.message_index_length,
                d.message_index_offsets.is_empty(),
            )
        })
        .collect();
    for (i, &(start, chunk_end, end, no_mi)) in ranges
        .iter()
        .chain(std::iter::once(&(
            data_limit, data_limit, data_limit, false,
        )))
        .enumerate()
    {
        if start > gap_start {
            w.mi_target = previous;
            let stop = w.walk(gap_start, start).map_err(|e| {
                Fallback::with_error("the data section does not match the chunk index", e)
            })?;
            if matches!(stop, Stop::DataEnd { .. } | Stop::Footer(_)) && i < ranges.len() {
                return Err(Fallback::new(format!(
                    "an indexed chunk at byte {start} lies after the end of the data section"
                )));
            }
        }
        previous = no_mi.then_some(MiTarget {
            chunk: i,
            chunk_end,
            next: chunk_end,
        });
        gap_start = end;
    }
    for (id, s) in schemas {
        w.schemas.entry(id).or_insert(s);
    }
    for (id, c) in channels {
        w.channels.entry(id).or_insert(c);
    }
    read_indexed_metadata(file, ctx, &w, &mut extras, metadata_indexes);
    Ok(finish(file, ctx, w, extras))
}

/// A chunk entry from a ChunkIndex record.
fn chunk_from_index(ci: &records::ChunkIndex<'_>) -> (ChunkMeta, ChunkDetail) {
    let mut offsets: Vec<(u16, u64)> = ci.message_index_offsets.iter().collect();
    offsets.sort_by_key(|&(_, o)| o);
    let counts = message_index_counts(ci, &offsets);
    let channels = if offsets.is_empty() {
        None
    } else if let Some(counts) = &counts {
        // Writers (the Go library among them) emit an empty MessageIndex for every
        // channel they know; only the non-empty ones say the channel is in the chunk.
        Some(
            counts
                .iter()
                .filter(|&&(_, n)| n > 0)
                .map(|&(c, _)| u64::from(c))
                .collect(),
        )
    } else {
        let ids: BTreeSet<u64> = offsets.iter().map(|&(c, _)| u64::from(c)).collect();
        Some(ids.into_iter().collect())
    };
    let meta = ChunkMeta {
        index: 0,
        offset: ci.chunk_start_offset,
        length: ci.chunk_length,
        start_time: Some(ci.message_start_time),
        end_time: Some(ci.message_end_time),
        message_count: counts.as_ref().map(|c| c.iter().map(|&(_, n)| n).sum()),
        channels,
        compression: ci.compression.to_string(),
        compressed_size: ci.compressed_size,
        uncompressed_size: Some(ci.uncompressed_size),
    };
    let message_index_length = if offsets.is_empty() {
        0
    } else {
        ci.message_index_length
    };
    let detail = ChunkDetail {
        kind: ChunkKind::Chunk,
        message_index_offsets: offsets,
        message_index_length,
    };
    (meta, detail)
}

/// Entries per channel of a chunk's MessageIndex records, derived from the
/// records' lengths alone: the index records are contiguous after the chunk, so
/// each one's length is the distance to the next offset (the last one ends at
/// `message_index_length`). A record is 15 bytes (opcode, length, channel id,
/// array length) plus 16 per entry, plus any padding shorter than an entry.
/// `None` when the offsets are not laid out that way.
fn message_index_counts(
    ci: &records::ChunkIndex<'_>,
    offsets: &[(u16, u64)],
) -> Option<Vec<(u16, u64)>> {
    let end = ci
        .chunk_start_offset
        .checked_add(ci.chunk_length)?
        .checked_add(ci.message_index_length)?;
    if offsets.first().map(|&(_, o)| o) != ci.chunk_start_offset.checked_add(ci.chunk_length) {
        return None;
    }
    let mut out = Vec::with_capacity(offsets.len());
    for (i, &(channel, start)) in offsets.iter().enumerate() {
        let next = offsets.get(i + 1).map_or(end, |&(_, o)| o);
        let len = next.checked_sub(start)?;
        if len < 15 {
            return None;
        }
        out.push((channel, (len - 15) / 16));
    }
    Some(out)
}

/// Adds the metadata records named by MetadataIndex records (those the walk did
/// not already find), reading each record for its key/value pairs. A record that
/// cannot be read is still listed, with no pairs.
fn read_indexed_metadata(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    w: &Walker<'_>,
    extras: &mut Extras,
    indexes: Vec<(u64, u64, String)>,
) {
    for (offset, length, name) in indexes {
        if w.metadata.iter().any(|m| m.offset == Some(offset)) {
            continue;
        }
        let metadata = read_metadata(file, ctx, offset, length).unwrap_or_default();
        extras.metadata.push(MetadataInfo {
            offset: Some(offset),
            name,
            metadata,
        });
    }
}

/// The key/value pairs of the Metadata record at `offset`.
fn read_metadata(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    offset: u64,
    length: u64,
) -> Option<BTreeMap<String, String>> {
    let raw = file.read_vec(ctx, offset, length, "metadata record").ok()?;
    let (opcode, len) = super::walk::prefix_fields(&raw);
    if opcode != op::METADATA {
        return None;
    }
    let content = raw
        .get(RECORD_PREFIX_LEN as usize..)?
        .get(..usize::try_from(len).ok()?)?;
    Some(records::parse_metadata(content).ok()?.metadata.to_btree())
}

/// Common assembly for both paths: channel discovery, channels, statistics, properties.
fn finish(file: &dyn ReadAt, ctx: &ErrorContext, mut w: Walker<'_>, mut extras: Extras) -> Summary {
    w.chunks.sort_by_key(|(m, _)| m.offset);
    discover_channels(file, ctx, &mut w, &extras);

    // Channels: defined ones, then synthetic ones for ids used but defined nowhere.
    let mut channels = BTreeMap::new();
    for def in w.channels.values() {
        channels.insert(
            u64::from(def.id),
            def.to_channel(w.schemas.get(&def.schema_id)),
        );
    }
    for (meta, _) in &w.chunks {
        for &id in meta.channels.iter().flatten() {
            if let Ok(id16) = u16::try_from(id) {
                channels
                    .entry(id)
                    .or_insert_with(|| synthetic_channel(id16));
            }
        }
    }

    // Attachments and metadata: from the indexes and from the walked records.
    let mut attachments = extras.attachments;
    for a in w.attachments {
        if !attachments.iter().any(|x| x.offset == a.offset) {
            attachments.push(a);
        }
    }
    attachments.sort_by_key(|a| a.offset);
    extras.metadata.extend(w.metadata);
    let mut metadata = extras.metadata;
    metadata.sort_by_key(|m| m.offset);

    let mut chunks = Vec::with_capacity(w.chunks.len());
    let mut details = Vec::with_capacity(w.chunks.len());
    for (i, (mut meta, detail)) in w.chunks.into_iter().enumerate() {
        meta.index = i;
        chunks.push(meta);
        details.push(detail);
    }

    // Statistics: stated by the file, else derived from the chunks when all are known.
    let (message_count, channel_message_counts, start_time, end_time) = match &extras.stats {
        Some(s) => {
            let counts =
                (!s.channel_message_counts.is_empty()).then(|| s.channel_message_counts.clone());
            let (start, end) = if s.message_count > 0 {
                (Some(s.start), Some(s.end))
            } else {
                (None, None)
            };
            (Some(s.message_count), counts, start, end)
        }
        None => {
            let known = chunks
                .iter()
                .try_fold(0u64, |acc, c| acc.checked_add(c.message_count?));
            let with_messages = || chunks.iter().filter(|c| c.message_count != Some(0));
            let start = with_messages().filter_map(|c| c.start_time).min();
            let end = with_messages().filter_map(|c| c.end_time).max();
            (known, None, start, end)
        }
    };

    let mut properties = Vec::new();
    if let Some((profile, library)) = &w.header {
        properties.push(("library".to_string(), library.clone()));
        properties.push(("profile".to_string(), profile.clone()));
    }
    let mut by_codec: BTreeMap<&str, usize> = BTreeMap::new();
    let mut loose = 0usize;
    for (meta, detail) in chunks.iter().zip(&details) {
        match detail.kind {
            ChunkKind::Chunk => {
                *by_codec
                    .entry(if meta.compression.is_empty() {
                        "none"
                    } else {
                        meta.compression.as_str()
                    })
                    .or_default() += 1
            }
            ChunkKind::Loose => loose += 1,
        }
    }
    if !by_codec.is_empty() {
        let text = by_codec
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        properties.push(("chunk_compression".to_string(), text));
    }
    if loose > 0 {
        properties.push(("loose_message_ranges".to_string(), loose.to_string()));
    }
    properties.push(("index".to_string(), extras.index_note));

    Summary {
        format: "mcap",
        file_size: file.size(),
        channels,
        chunks,
        indexed: extras.indexed,
        message_count,
        channel_message_counts,
        start_time,
        end_time,
        attachments,
        metadata,
        properties,
        damage: None,
        private: Some(Arc::new(McapIndex {
            schemas: w.schemas,
            chunks: details,
        })),
    }
}

/// Opens chunks whose channels are not (or may not be) defined outside them.
fn discover_channels(file: &dyn ReadAt, ctx: &ErrorContext, w: &mut Walker<'_>, extras: &Extras) {
    // With a summary that lists channels (and, if it has statistics, all of them),
    // a chunk without message indexes is trusted to use only those channels.
    let trust_listed = extras.summary_channels
        && !w.channels.is_empty()
        && extras
            .stats
            .as_ref()
            .is_none_or(|s| s.channel_count as usize <= w.channels.len());
    let mut scanned = vec![false; w.chunks.len()];
    for i in 0..w.chunks.len() {
        let Some((meta, detail)) = w.chunks.get(i) else {
            continue;
        };
        if detail.kind != ChunkKind::Chunk {
            continue;
        }
        // A channel is unresolved when no Channel record defines it, or when the
        // Schema record it names has not been seen.
        let unresolved = |id: u64| {
            let Ok(id) = u16::try_from(id) else {
                return false;
            };
            match w.channels.get(&id) {
                None => true,
                Some(c) => c.schema_id != 0 && !w.schemas.contains_key(&c.schema_id),
            }
        };
        let needed = match &meta.channels {
            Some(ids) => ids.iter().any(|&id| unresolved(id)),
            None => !trust_listed || w.channels.keys().any(|&id| unresolved(u64::from(id))),
        };
        if !needed {
            continue;
        }
        scan_for_channels(file, ctx, w, i, &mut scanned);
        // A Channel record may sit in an earlier chunk that holds none of its
        // messages (and the summary section that repeats it may be cut off):
        // look back through the chunks not opened yet.
        let mut j = 0;
        while j < i && chunk_unresolved(w, i) {
            scan_for_channels(file, ctx, w, j, &mut scanned);
            j += 1;
        }
    }
}

/// Whether chunk `i` uses a channel id that no Channel record seen so far defines.
fn chunk_unresolved(w: &Walker<'_>, i: usize) -> bool {
    w.chunks[i].0.channels.iter().flatten().any(|&id| {
        u16::try_from(id).is_ok_and(|id| match w.channels.get(&id) {
            None => true,
            Some(c) => c.schema_id != 0 && !w.schemas.contains_key(&c.schema_id),
        })
    })
}

/// Opens chunk `i` (once) to learn its Schema and Channel records, and its
/// channel ids and message count where the walk did not know them.
fn scan_for_channels(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    w: &mut Walker<'_>,
    i: usize,
    scanned: &mut [bool],
) {
    let Some((meta, detail)) = w.chunks.get(i) else {
        return;
    };
    if scanned[i] || detail.kind != ChunkKind::Chunk {
        return;
    }
    scanned[i] = true;
    // A damaged chunk is reported when it is read; here it just teaches nothing.
    let Ok(scan) = chunk::scan_chunk(file, ctx, meta.offset, meta.length) else {
        return;
    };
    for s in scan.schemas {
        w.schemas.entry(s.id).or_insert(s);
    }
    for c in scan.channel_defs {
        w.channels.entry(c.id).or_insert(c);
    }
    if let Some((meta, _)) = w.chunks.get_mut(i) {
        if meta.channels.is_none() {
            meta.channels = Some(scan.channels.iter().map(|&c| u64::from(c)).collect());
        }
        if meta.message_count.is_none() {
            meta.message_count = Some(scan.messages);
        }
    }
}
