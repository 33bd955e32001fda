//! CARLA recorder files (`client.start_recorder(...)`, usually `.log`): the
//! byte-level reader (no DataFusion, no Arrow).
//!
//! A recording is an info header (`u16` version 1, the string
//! `"CARLA_RECORDER"`, an `i64` Unix date, the map name) followed by packets
//! (`u8` id, `u32` size, body) grouped in frames (`FrameStart` … `FrameEnd`).
//! There is no index and no footer. [`CarlaFormat`] implements [`FormatReader`]:
//!
//! - [`FormatReader::sniff`] recognises the header (`.log` is too generic for an
//!   extension, so `extensions()` is empty; `STORED AS CARLA` works by name).
//! - [`FormatReader::summary`] walks the packet headers once (5 bytes per packet
//!   plus each 24-byte `FrameStart` body, every other body skipped by its size)
//!   and builds a frame index (offset, frame id, elapsed, duration). Chunks are
//!   runs of whole frames of about 1 MiB. Channels are packet kinds with
//!   synthetic ids (the kind's id in CARLA 0.9.16; unknown ids `256 + id`, topic
//!   `unknown_<id>`), topic = the kind in snake case, `message_type`
//!   `carla.<PacketName>`, encoding `carla`, metadata `packet_id` = the raw id in
//!   this file. `log_time` = header date × 1e9 + round(elapsed × 1e9). A cut
//!   tail is reported in [`Summary::damage`](crate::model::Summary::damage).
//! - The layout is detected from the file: ids 21..23 (0.9.15, ue4-dev 2024 and
//!   0.9.16 disagree: the packet between Collision and Position in the first
//!   frame is the door packet), `f64` vectors (UE5: the first EventAdd parses
//!   exactly with one width only), 36- or 48-byte wheel physics (the first
//!   PhysicsControl parses exactly). It is listed in `properties` (`carla.*`).
//! - [`FormatReader::read_chunk`] reads the chunk's byte range and delivers one
//!   message per packet (body as stored) of the frames inside the selection's
//!   time window, with extra columns `frame` and `elapsed`.
//! - Typed tables (see [`tables`]) decode the records, one row per record.
//! - [`FormatReader::info_text`] reproduces CARLA's `show_recorder_file_info`.
//!
//! Units in the typed tables are SI: metres (CARLA stores centimetres),
//! degrees, seconds, m/s.

use crate::error::{ErrorContext, Result};
use crate::formats::{FormatReader, TypedTable};
use crate::io::ReadAt;
use crate::model::{
    Channel, ChannelSchema, ChunkMeta, ChunkRead, ExtraColumn, ExtraKind, ExtraValue, Message,
    MessageReceiver, Selection, Summary,
};
use crate::table::{RowReceiver, TableDef};
use std::sync::LazyLock;

pub mod chunk;
pub mod decode;
pub mod fmt;
pub mod index;
pub mod info;
pub mod layout;
pub mod queries;
pub mod tables;

pub use index::{CarlaIndex, ChunkDetail, FrameEntry, Header, MAGIC};
pub use layout::{Kind, Layout, TailIds};

/// The CARLA recorder format.
#[derive(Debug, Clone, Copy, Default)]
pub struct CarlaFormat;

/// The `messages` columns CARLA adds.
pub(crate) const EXTRA_COLUMNS: &[ExtraColumn] = &[
    ExtraColumn {
        name: "frame",
        kind: ExtraKind::UInt64,
        doc: "CARLA recorder frame id (1, 2, ...) of the packet's frame",
    },
    ExtraColumn {
        name: "elapsed",
        kind: ExtraKind::Float64,
        doc: "seconds since the recording started (the frame's elapsed time)",
    },
];

impl FormatReader for CarlaFormat {
    fn chunk_times_enclose_messages(&self) -> bool {
        true
    }

    fn keeps_index(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "carla"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[]
    }

    fn sniff(&self, head: &[u8]) -> bool {
        head.get(2..4) == Some(&[14, 0]) && head.get(4..18) == Some(MAGIC)
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
        let ctx = ErrorContext::new(file.name(), "carla", file.size());
        let (idx, _) = chunk::find(summary, chunk, &ctx)?;
        let layout = idx.layout;
        // Per raw id: the channel and whether its topic is wanted.
        let mut chans: Vec<Option<crate::model::Channel>> = vec![None; 256];
        let mut wanted = [false; 256];
        for raw in 0..=255u8 {
            if idx.packets[raw as usize] == 0 {
                continue;
            }
            let id = index::channel_id(&layout, raw);
            let ch = summary
                .channels
                .get(&id)
                .cloned()
                .unwrap_or_else(|| index::channel_for(&layout, raw));
            wanted[raw as usize] = sel.wants_topic(&ch.topic);
            chans[raw as usize] = Some(ch);
        }
        let w = chunk::for_each_packet(
            file,
            summary,
            chunk,
            sel,
            &|raw| wanted[raw as usize],
            &mut |p| {
                let Some(ch) = chans[p.raw as usize].as_ref() else {
                    return Ok(crate::model::Flow::Continue);
                };
                let extra = [
                    ExtraValue::UInt64(p.frame.id),
                    ExtraValue::Float64(p.frame.elapsed),
                ];
                Ok(receiver.message(Message {
                    channel: ch,
                    log_time: p.frame.log_time,
                    publish_time: None,
                    sequence: None,
                    data: if sel.payload { p.body } else { &[] },
                    data_buffer: Some(p.buffer),
                    extra: &extra,
                }))
            },
        )?;
        Ok(ChunkRead {
            messages: w.parsed,
            stopped: w.stopped,
            skipped: w.skipped,
            ..ChunkRead::default()
        })
    }

    fn extra_columns(&self) -> &'static [ExtraColumn] {
        EXTRA_COLUMNS
    }

    fn tables(&self) -> &'static [&'static dyn TypedTable] {
        &CARLA_TABLES
    }

    /// CARLA packets have no message schema: their fields are the typed tables.
    fn schema_of(&self, channel: &Channel) -> ChannelSchema {
        ChannelSchema::Unavailable(format!(
            "CARLA packets ({:?}) are decoded by the typed tables instead: {}('file') ...",
            channel.topic,
            tables::TABLES.join("('file'), ")
        ))
    }

    fn info_text(&self, file: &dyn ReadAt, summary: &Summary, all: bool) -> Option<Result<String>> {
        Some(info::info_text(file, summary.private::<CarlaIndex>(), all))
    }
}

/// The typed tables, one object per name of [`tables::TABLES`].
static CARLA_TABLES: LazyLock<Vec<&'static dyn TypedTable>> = LazyLock::new(|| {
    tables::TABLES
        .iter()
        .map(|&name| &*Box::leak(Box::new(CarlaTable(name))) as &'static dyn TypedTable)
        .collect()
});

/// One CARLA typed table, named; its rows are built by [`tables`] from the
/// packets of the kinds the table reads.
#[derive(Debug)]
struct CarlaTable(&'static str);

impl TypedTable for CarlaTable {
    fn name(&self) -> &'static str {
        self.0
    }

    fn def(&self, _summary: &Summary, _arg: Option<&str>) -> Result<TableDef> {
        tables::table_def(self.0).ok_or_else(|| crate::Error::UnsupportedTable {
            format: "carla",
            table: self.0.to_string(),
        })
    }

    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        chunk: &ChunkMeta,
        _arg: Option<&str>,
        sel: &Selection,
        receiver: &mut dyn RowReceiver,
    ) -> Result<ChunkRead> {
        tables::read_chunk(file, summary, chunk, self.0, sel, receiver)
    }

    fn read_file(
        &self,
        file: &dyn ReadAt,
        summary: &Summary,
        _arg: Option<&str>,
        receiver: &mut dyn RowReceiver,
    ) -> Result<()> {
        tables::read_file(file, summary, self.0, receiver)
    }
}
