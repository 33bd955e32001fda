//! Placeholder for the record reader (being written).

use crate::error::{ErrorContext, Result};
use crate::io::ReadAt;
use crate::model::{ChunkMeta, ChunkRead, MessageSink, Selection, Summary};

use super::LogFormat;

/// The record format.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApolloFormat;

impl LogFormat for ApolloFormat {
    fn name(&self) -> &'static str {
        "record"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[]
    }

    fn sniff(&self, _head: &[u8]) -> bool {
        false
    }

    fn summary(&self, file: &dyn ReadAt) -> Result<Summary> {
        Err(ErrorContext::new(file.name(), "record", file.size())
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
        Err(ErrorContext::new(file.name(), "record", file.size())
            .unsupported(0, "not yet implemented"))
    }
}
