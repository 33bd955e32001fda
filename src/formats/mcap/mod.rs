//! MCAP (placeholder; being written).
use crate::error::Result;
use crate::formats::LogFormat;
use crate::io::ReadAt;
use crate::model::{ChunkMeta, ChunkRead, MessageSink, Selection, Summary};

/// The MCAP format.
#[derive(Debug, Default, Clone, Copy)]
pub struct McapFormat;

impl LogFormat for McapFormat {
    fn name(&self) -> &'static str {
        "mcap"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["mcap"]
    }
    fn sniff(&self, head: &[u8]) -> bool {
        head.starts_with(b"\x89MCAP0\r\n")
    }
    fn summary(&self, _file: &dyn ReadAt) -> Result<Summary> {
        todo!()
    }
    fn read_chunk(&self, _: &dyn ReadAt, _: &Summary, _: &ChunkMeta, _: &Selection, _: &mut dyn MessageSink) -> Result<ChunkRead> {
        todo!()
    }
}
