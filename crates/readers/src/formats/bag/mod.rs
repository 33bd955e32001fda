//! ROS1 bag, format 2.0: the byte-level reader (no DataFusion, no Arrow).
//!
//! [`BagFormat`] implements [`FormatReader`]:
//!
//! - [`FormatReader::summary`] reads the bag header and the index section it points
//!   at (connection and chunk-info records): one [`crate::model::Channel`]
//!   per connection (id = connection id, `message_type` = the ROS type such as
//!   `sensor_msgs/Imu`, `message_encoding` `ros1`, `schema_encoding` `ros1msg`,
//!   schema = the full `message_definition`, metadata `md5sum`, `callerid`,
//!   `latching` and any other connection field) and one
//!   [`crate::model::ChunkMeta`] per chunk info (time bounds
//!   inclusive, connection ids with messages, exact counts). Several connections
//!   on one topic stay several channels with the same topic. Bag start/end are
//!   the min/max over *all* chunk infos (chunks may be out of order or overlap).
//!   An unindexed bag (`index_pos` 0: the recording was never closed), a damaged
//!   index or a truncated file is walked instead, with bounded memory; a
//!   truncated tail is reported in [`Summary::damage`](crate::model::Summary::damage)
//!   while everything before it stays readable. See `summary` and [`walk`].
//! - [`FormatReader::read_chunk`] reads one chunk record, decompresses it (`none`,
//!   `bz2`, `lz4` — any LZ4 frame flavour: ROS `roslz4` frames with independent
//!   blocks and a content checksum, and python `rosbags` frames with linked
//!   blocks and a content size) into a buffer bounded by the declared size, and
//!   delivers its message-data records in file order, with `publish_time` and
//!   `sequence` `None`. The index-data records after the chunk are used like
//!   MCAP message indexes: a chunk that only partly overlaps the wanted time
//!   window is skipped (`ChunkRead::skipped`) when none of its selected messages
//!   lies in the window, and a read that needs neither payloads nor full headers
//!   is answered from them without decompressing (the big win for bz2). Index
//!   data is used only when it adds up exactly to the chunk info's counts.
//!
//! Messages at time 0 are returned like any other (the ROS C++ reader drops
//! index entries before `ros::TIME_MIN`, 1 ns; python `rosbags` keeps them).
//!
//! Record headers are `len | name=value` fields in any order; padding is never
//! assumed, every record is skipped by its header and data lengths, and every
//! length is checked against the bytes that remain before anything is
//! allocated. Encrypted bags and other format versions are refused with a clear
//! error.
//!
//! Modules:
//! - [`records`]: op codes, header fields, tolerant slice parsers;
//! - [`index`]: the reader-private summary data and connection conversion;
//! - `summary`: bag header, index section, fallback, discovery, assembly;
//! - [`walk`]: top-level records in file order, the recovery walk;
//! - `chunk`: chunk headers, decompression, inner records, index-data shortcuts.
//!
//! Bags are written by the `logsql-writers` crate, from these records.

use crate::error::{ErrorContext, Result};
use crate::formats::FormatReader;
use crate::io::ReadAt;
use crate::model::{ChunkMeta, ChunkRead, MessageReceiver, Selection, Summary};

mod chunk;
pub mod index;
pub mod records;
mod summary;
pub mod walk;

pub use index::{BagIndex, ChunkDetail};
pub use records::MAGIC;
pub use summary::PROBE_LIMIT;

/// The ROS1 bag (2.0) format.
#[derive(Debug, Default, Clone, Copy)]
pub struct BagFormat;

impl FormatReader for BagFormat {
    /// Index data records hold every message's connection and time.
    fn times_in_index(&self) -> bool {
        true
    }

    fn chunk_times_enclose_messages(&self) -> bool {
        true
    }

    /// A file still named `.bag.active` was never closed by `rosbag record`.
    fn doctor(&self, file: &dyn ReadAt, _summary: &Summary, report: &mut crate::doctor::Report) {
        if file.name().ends_with(".bag.active") {
            report.add(crate::doctor::Problem::new(
                crate::doctor::ProblemKind::UnclosedRecording,
                None,
                "named .bag.active: the recorder never closed it (its index is usually missing)",
            ));
        }
    }

    fn name(&self) -> &'static str {
        "bag"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["bag"]
    }

    fn sniff(&self, head: &[u8]) -> bool {
        head.starts_with(MAGIC)
    }

    fn summary_with_limits(
        &self,
        file: &dyn ReadAt,
        limits: &crate::limits::Limits,
    ) -> Result<Summary> {
        summary::read_summary(file, limits)
    }

    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        sel: &Selection,
        receiver: &mut dyn MessageReceiver,
    ) -> Result<ChunkRead> {
        let ctx = ErrorContext::new(file.name(), "bag", file.size()).with_limits(sel.limits);
        let index_end = find_detail(summary, chunk).map(|d| d.index_end);
        chunk::read(file, &ctx, summary, chunk, index_end, sel, receiver)
    }
}

/// The reader-private detail of `chunk`, matched by index and offset.
fn find_detail<'s>(summary: &'s Summary, chunk: &ChunkMeta) -> Option<&'s ChunkDetail> {
    let index = summary.private::<BagIndex>()?;
    index.chunks.get(summary.chunk_position(chunk)?)
}
