//! The byte-level format readers and the [`FormatReader`] trait they implement.
//!
//! A format reader knows nothing of DataFusion or Arrow: it turns bytes read
//! through a [`ReadAt`] into a [`Summary`] and, chunk by chunk, into
//! [`Message`](crate::model::Message)s handed to a [`MessageReceiver`].

use std::fmt::Debug;
use std::sync::Arc;

use crate::error::{Error, Result, hex_head};
use crate::io::ReadAt;
use crate::limits::Limits;
use crate::model::{
    Channel, ChannelSchema, ChannelTimes, ChunkMeta, ChunkRead, ExtraColumn, MessageReceiver,
    Selection, Summary,
};
use crate::table::{RowReceiver, TableDef};

pub mod apollo;
pub mod bag;
pub mod bddf;
pub mod carla;
pub mod channels;
pub mod chunk_io;
pub mod mcap;
pub mod ros2;

/// How many leading bytes [`FormatReader::sniff`] is given.
pub const SNIFF_LEN: usize = 64;

/// The first and last `log_time` of each channel, by channel id
/// ([`FormatReader::channel_spans`]).
pub(crate) type ChannelSpans = std::collections::BTreeMap<u64, (Option<u64>, Option<u64>)>;

/// What the scan engine needs from a format. Implemented once per format.
pub trait FormatReader: Send + Sync + Debug + 'static {
    /// Short lower-case name, used in `STORED AS` and in errors (`mcap`, `bag`, ...).
    fn name(&self) -> &'static str;

    /// File-name extensions that usually hold this format, without the dot.
    fn extensions(&self) -> &'static [&'static str];

    /// Whether the file's first bytes (up to [`SNIFF_LEN`]) look like this format.
    fn sniff(&self, head: &[u8]) -> bool;

    /// Whether the file named `name` (a path or URL) whose first bytes are
    /// `head` is of this format. Content alone decides ([`FormatReader::sniff`])
    /// unless a format's files may come wrapped in a generic container: a
    /// rosbag2 database compressed whole is a zstd frame, claimed only under
    /// its name `*.db3.zstd` (other zstd files are not log files).
    fn sniff_named(&self, name: &str, head: &[u8]) -> bool {
        let _ = name;
        self.sniff(head)
    }

    /// Reads what describes the file: channels, chunk list, statistics, under
    /// the default size caps ([`Limits::default`]; see
    /// [`FormatReader::summary_with_limits`]).
    fn summary(&self, file: &dyn ReadAt) -> Result<Summary> {
        self.summary_with_limits(file, &Limits::default())
    }

    /// Reads what describes the file: channels, chunk list, statistics.
    ///
    /// Reads only the file's index when it has a usable one; otherwise walks the
    /// file to rebuild the chunk list (a recovery scan). Damage that still leaves
    /// a readable prefix is reported in [`Summary::damage`], not as an error.
    /// A chunk a recovery scan decompresses, or the temporary copy of a
    /// database compressed whole (`.db3.zstd`), is bounded by `limits` (the
    /// session's `logsql.max_chunk_bytes` and `logsql.max_message_bytes`);
    /// formats whose summaries decompress nothing ignore them.
    fn summary_with_limits(&self, file: &dyn ReadAt, limits: &Limits) -> Result<Summary>;

    /// Delivers the messages of one chunk of `summary` to `receiver`, restricted (as
    /// far as is cheap) to `sel`. On damage inside the chunk, the messages before
    /// it are delivered, then the error is returned.
    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        sel: &Selection,
        receiver: &mut dyn MessageReceiver,
    ) -> Result<ChunkRead>;

    /// Appends the log time of every message of one chunk of `summary` to `out`,
    /// per channel id, from the format's own per-message index alone (no
    /// decompression, no message records), for callers that need every time
    /// but no order (`logsql info`'s timelines). `Ok(false)`, with nothing
    /// appended, when the index cannot answer for this chunk: the caller then
    /// reads it with [`FormatReader::read_chunk`]. The default always answers
    /// `Ok(false)`.
    fn chunk_times(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        out: &mut ChannelTimes,
    ) -> Result<bool> {
        let _ = (file, summary, chunk, out);
        Ok(false)
    }

    /// Whether every message's channel and log time can be read from the
    /// file's own index, without reading chunk bodies: MCAP's message indexes
    /// ([`FormatReader::chunk_times`]), a ROS1 bag's index data, a ROS 2
    /// database's timestamp column (both through `read_chunk` without
    /// payloads). Callers that want every time but must not read a whole file
    /// for it (the catalog's per-topic gaps) ask first. Default `false`.
    fn times_in_index(&self) -> bool {
        false
    }

    /// Name endings of files that accompany a file of this format and are not
    /// one themselves (SQLite's `-wal`, `-shm` and `-journal` beside a `.db3`).
    /// A table stored as this format leaves them out instead of refusing them.
    fn companion_suffixes(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether this format's summaries give each chunk time bounds that enclose
    /// every message of the chunk (taken from the file's own index or from the
    /// chunk headers, as the recorder wrote them). The engine then declares a
    /// file's time order when its chunks are in time order and do not overlap
    /// (`engine::time_order`), and checks each chunk's messages against the
    /// bounds while reading. `false` (the default): the bounds are only a hint
    /// (Apollo's chunk headers), and scans of the format never declare an order.
    fn chunk_times_enclose_messages(&self) -> bool {
        false
    }

    /// Whether files of this format normally carry an index or summary, so
    /// that one without it is a problem `logsql doctor` reports (default
    /// `true`; CARLA recordings have none).
    fn keeps_index(&self) -> bool {
        true
    }

    /// Whether the format allows chunks whose times overlap or go back
    /// (default `true`): `logsql doctor` then reports them as information,
    /// not damage.
    fn chunks_may_overlap(&self) -> bool {
        true
    }

    /// The checks only this format can make, added to `report` by
    /// [`crate::doctor::check`] after the shared ones (unknown records, chunk
    /// headers that disagree with the index, an unclosed recording). The
    /// default adds nothing.
    fn doctor(&self, file: &dyn ReadAt, summary: &Summary, report: &mut crate::doctor::Report) {
        let _ = (file, summary, report);
    }

    /// Format-specific `messages` columns after the common ones, filled from
    /// [`Message::extra`](crate::model::Message::extra).
    fn extra_columns(&self) -> &'static [ExtraColumn] {
        &[]
    }

    /// The typed tables this format derives (see [`crate::table`]), each
    /// exposed as a table function `name('path' [, arg])`.
    fn tables(&self) -> &'static [&'static dyn TypedTable] {
        &[]
    }

    /// The typed table named `name`, or [`Error::UnsupportedTable`] when this
    /// format derives none of that name. Not meant to be overridden: it looks
    /// the name up in [`FormatReader::tables`].
    fn table(&self, name: &str) -> Result<&'static dyn TypedTable> {
        self.tables()
            .iter()
            .copied()
            .find(|t| t.name() == name)
            .ok_or_else(|| Error::UnsupportedTable {
                format: self.name(),
                table: name.to_string(),
            })
    }

    /// The file's whole-file checksum (BDDF's SHA1 over the file), as a digest
    /// to feed with the file's bytes in order. `None`: the format has none
    /// (per-chunk checksums are verified by `read_chunk`). The engine feeds it
    /// with the bytes a full scan reads anyway, and [`FormatReader::verify`] with
    /// the whole file.
    fn file_digest(&self, file: &dyn ReadAt, summary: &Summary) -> Option<Box<dyn FileDigest>> {
        let _ = (file, summary);
        None
    }

    /// Verifies the whole-file checksum of [`FormatReader::file_digest`] by reading
    /// the covered bytes. `None`: the format has none.
    fn verify(&self, file: &dyn ReadAt, summary: &Summary) -> Option<Result<()>> {
        let digest = self.file_digest(file, summary)?;
        Some(feed_digest(file, digest, 0))
    }

    /// The first and last `log_time` of every channel with messages, when the
    /// format can answer them without reading message headers chunk by chunk
    /// (a ROS 2 database: two seeks on its timestamp index per topic).
    /// `None`: the engine reads the headers of the chunks that decide them.
    fn channel_spans(&self, summary: &Summary) -> Option<Result<ChannelSpans>> {
        let _ = summary;
        None
    }

    /// Whether the reader reads chunks through a library that does its own
    /// I/O by path (SQLite for a ROS 2 `.db3`) rather than through the
    /// [`ReadAt`] it is given: the engine then runs its chunk reads on a
    /// blocking pool instead of the task that decodes.
    fn reads_by_path(&self) -> bool {
        false
    }

    /// The format's own human-readable description of the file, for `logsql
    /// info` (e.g. CARLA's `show_recorder_file_info` text); `all` asks for the
    /// detailed variant. `None`: the generic summary is printed instead.
    fn info_text(&self, file: &dyn ReadAt, summary: &Summary, all: bool) -> Option<Result<String>> {
        let _ = (file, summary, all);
        None
    }

    /// How `channel`'s payloads are described, for decoding them into typed
    /// columns (`read_topic`): the decode layer's one dispatcher serves every
    /// format from this. The default, [`ChannelSchema::Stored`], is the
    /// channel's own encodings and schema bytes; a format whose schemas are
    /// kept otherwise (Apollo's `proto_desc`) says so, and one whose channels
    /// cannot be decoded says why ([`ChannelSchema::Unavailable`]).
    fn schema_of(&self, channel: &Channel) -> ChannelSchema {
        let _ = channel;
        ChannelSchema::Stored
    }
}

/// A typed table a format derives from its records: its name, its definition
/// for a file, and its readers. A table whose [`TableDef::per_chunk`] is `true`
/// is read chunk by chunk ([`TypedTable::read_chunk`]); one whose rows are facts
/// about the whole file is read at once ([`TypedTable::read_file`]).
pub trait TypedTable: Send + Sync + Debug + 'static {
    /// The table's name (the table function's name).
    fn name(&self) -> &'static str;

    /// The table's definition for the file of `summary`; `arg` is the table
    /// function's optional second argument (e.g. a BDDF series name).
    fn def(&self, summary: &Summary, arg: Option<&str>) -> Result<TableDef>;

    /// Delivers the rows found in one chunk, restricted (as far as is cheap)
    /// to `sel`. Rows follow [`TypedTable::def`]'s columns. The default (for
    /// whole-file tables) is an error.
    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        arg: Option<&str>,
        sel: &Selection,
        receiver: &mut dyn RowReceiver,
    ) -> Result<ChunkRead> {
        let _ = (file, summary, chunk, arg, sel, receiver);
        Err(Error::Invalid(format!(
            "table {} is read for the whole file, not per chunk",
            self.name()
        )))
    }

    /// Delivers every row of a whole-file table (one whose
    /// [`TableDef::per_chunk`] is `false`). The default (for per-chunk tables)
    /// is an error.
    fn read_file(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        arg: Option<&str>,
        receiver: &mut dyn RowReceiver,
    ) -> Result<()> {
        let _ = (file, summary, arg, receiver);
        Err(Error::Invalid(format!(
            "table {} is read per chunk, not for the whole file",
            self.name()
        )))
    }
}

/// A whole-file checksum being computed: bytes `0..end()` of the file, fed in order.
pub trait FileDigest: Send {
    /// The end of the covered bytes (exclusive); the digest covers `0..end()`.
    fn end(&self) -> u64;
    /// Adds the next bytes of the file.
    fn update(&mut self, bytes: &[u8]);
    /// Compares the digest of every byte fed with the stored one: a mismatch is
    /// an [`Error::Checksum`] naming the file, the offset and both values.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// Feeds `digest` with `file[from..digest.end()]` and finishes it.
pub fn feed_digest(file: &dyn ReadAt, mut digest: Box<dyn FileDigest>, from: u64) -> Result<()> {
    let end = digest.end().min(file.size());
    feed_range(file, digest.as_mut(), from..end)?;
    digest.finish()
}

/// Feeds `digest` with `file[range]`, read in pieces of at most 1 MiB (so
/// memory stays bounded however large the range).
pub fn feed_range(
    file: &dyn ReadAt,
    digest: &mut dyn FileDigest,
    range: std::ops::Range<u64>,
) -> Result<()> {
    const PIECE: u64 = 1 << 20;
    let mut buf = vec![0u8; PIECE.min(range.end.saturating_sub(range.start)) as usize];
    let mut pos = range.start;
    while pos < range.end {
        let n = (range.end - pos).min(PIECE) as usize;
        file.read_exact_at(pos, &mut buf[..n])
            .map_err(|e| Error::io(file.name(), e))?;
        digest.update(&buf[..n]);
        pos += n as u64;
    }
    Ok(())
}

/// Whether `path` names a companion file of `format` (see
/// [`FormatReader::companion_suffixes`]).
pub fn is_companion(format: &dyn FormatReader, path: &str) -> bool {
    format
        .companion_suffixes()
        .iter()
        .any(|s| path.ends_with(s))
}

/// Every format logsql reads, in sniffing order.
pub fn all() -> Vec<Arc<dyn FormatReader>> {
    vec![
        Arc::new(mcap::McapFormat),
        Arc::new(bag::BagFormat),
        Arc::new(apollo::ApolloFormat),
        Arc::new(bddf::BddfFormat),
        Arc::new(carla::CarlaFormat),
        Arc::new(ros2::Ros2Format),
    ]
}

/// The format with this name (case-insensitive), or one of its extensions.
pub fn by_name(name: &str) -> Option<Arc<dyn FormatReader>> {
    let name = name.to_ascii_lowercase();
    all()
        .into_iter()
        .find(|f| f.name() == name || f.extensions().contains(&name.as_str()))
}

/// The format whose magic bytes match `head`.
pub fn sniff(head: &[u8]) -> Option<Arc<dyn FormatReader>> {
    all().into_iter().find(|f| f.sniff(head))
}

/// The format of the file named `name` whose first bytes are `head` (see
/// [`FormatReader::sniff_named`]).
pub fn sniff_named(name: &str, head: &[u8]) -> Option<Arc<dyn FormatReader>> {
    all().into_iter().find(|f| f.sniff_named(name, head))
}

/// Detects the format of `file` from its content.
pub fn detect(file: &dyn ReadAt) -> Result<Arc<dyn FormatReader>> {
    let head = file
        .read_upto(0, SNIFF_LEN)
        .map_err(|e| Error::io(file.name(), e))?;
    sniff_named(file.name(), &head).ok_or_else(|| Error::UnknownFormat {
        file: file.name().to_string(),
        known: all()
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", "),
        head: if head.is_empty() {
            "(empty file)".into()
        } else {
            hex_head(&head)
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_found_by_their_names_only() {
        let mut listed = Vec::new();
        for format in all() {
            let names: Vec<&str> = format.tables().iter().map(|t| t.name()).collect();
            for name in &names {
                assert_eq!(format.table(name).unwrap().name(), *name);
            }
            let mut unique = names.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{}: a name twice", format.name());
            listed.push((format.name(), names.len()));
            assert_eq!(
                format.table("nope").unwrap_err().to_string(),
                format!("{} files have no table \"nope\"", format.name())
            );
        }
        assert_eq!(
            listed,
            [
                ("mcap", 0),
                ("bag", 0),
                ("record", 0),
                ("bddf", 2),
                ("carla", 21),
                ("ros2", 0)
            ]
        );
    }

    #[test]
    fn every_format_describes_a_channel_without_schema() {
        let channel = Channel {
            id: 3,
            topic: "/t".into(),
            message_type: Some("pkg/msg/M".into()),
            message_encoding: "cdr".into(),
            schema_encoding: None,
            schema: None,
            metadata: Default::default(),
        };
        let described: Vec<(&str, ChannelSchema)> = all()
            .iter()
            .map(|f| (f.name(), f.schema_of(&channel)))
            .collect();
        let unavailable = |why: &str| ChannelSchema::Unavailable(why.to_string());
        assert_eq!(
            described,
            [
                ("mcap", ChannelSchema::Stored),
                ("bag", ChannelSchema::Stored),
                (
                    "record",
                    unavailable(
                        "channel \"/t\" has no usable proto_desc for \"pkg/msg/M\" \
                         (SET logsql.descriptor_set = 'types.binpb' to supply one)"
                    )
                ),
                ("bddf", ChannelSchema::Stored),
                (
                    "carla",
                    unavailable(&format!(
                        "CARLA packets (\"/t\") are decoded by the typed tables instead: {}('file') ...",
                        carla::tables::TABLES.join("('file'), ")
                    ))
                ),
                (
                    "ros2",
                    unavailable("no message definition for pkg/msg/M: the bag stores none")
                ),
            ]
        );
        // The resolver's reason, left in the metadata at planning, is the ROS 2 one.
        let mut noted = channel.clone();
        noted.metadata.insert(
            crate::ros2_interfaces::MISSING_KEY.into(),
            "not on the path".into(),
        );
        assert_eq!(
            ros2::Ros2Format.schema_of(&noted),
            unavailable("not on the path")
        );
    }
}
