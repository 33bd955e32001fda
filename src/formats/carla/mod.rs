//! Placeholder for the carla reader (being written).

use crate::error::{ErrorContext, Result};
use crate::io::ReadAt;
use crate::model::{ChunkMeta, ChunkRead, MessageSink, Selection, Summary};

use super::LogFormat;

/// The carla format.
#[derive(Debug, Clone, Copy, Default)]
pub struct CarlaFormat;

impl LogFormat for CarlaFormat {
    fn name(&self) -> &'static str {
        "carla"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[]
    }

    fn sniff(&self, _head: &[u8]) -> bool {
        false
    }

    fn summary(&self, file: &dyn ReadAt) -> Result<Summary> {
        Err(ErrorContext::new(file.name(), "carla", file.size())
            .unsupported(0, "not yet implemented"))
    }

    fn read_chunk(
        &self,
        file: &dyn ReadAt,
        _summary: &Summary,
        _chunk: &ChunkMeta,
        _sel: &Selection,
        _sink: &mut dyn MessageSink,
    ) -> Result<ChunkRead> {
        Err(ErrorContext::new(file.name(), "carla", file.size())
            .unsupported(0, "not yet implemented"))
    }
}
