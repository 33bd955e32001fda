//! [`FormatWriter`]: what every output format offers the engine, one small
//! trait in the shape of DataFusion's `BatchSerializer` (one orchestrator,
//! many formats): rows in, in the order the query gives them, and a finished
//! file or directory out. The engine's one bridge drives any such writer on a
//! blocking thread; a writer knows nothing of DataFusion, async or cancel.

use arrow_array::RecordBatch;

use crate::error::Result;
use crate::source::SourceFile;

/// One output being written from record batches. A writer that is dropped
/// without [`FormatWriter::finish`] leaves nothing under its target name.
pub trait FormatWriter: Send {
    /// What the writer reports when done (at least the rows written).
    type Report: Written + Send + 'static;

    /// Registers a file the rows that follow may name in their `file`
    /// column, with what could be read of it (`None`: it was not read; its
    /// rows get what their own columns say). Formats that take nothing from
    /// the source files ignore it.
    fn add_source(&mut self, _name: &str, _source: Option<&SourceFile>) -> Result<()> {
        Ok(())
    }

    /// Writes every row of `batch`.
    fn write_batch(&mut self, batch: &RecordBatch) -> Result<()>;

    /// How far the writer got (for progress bars).
    fn progress(&self) -> Progress;

    /// Completes the output (indexes, summary, metadata, flushed). The
    /// caller then publishes it under its target name
    /// ([`crate::publish`]).
    fn finish(self) -> Result<Self::Report>;
}

/// How far a writer got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Rows taken.
    pub rows: u64,
    /// The format's own groups of rows finished so far, where it has them (a
    /// dataset's episodes); 0 otherwise.
    pub groups: u64,
}

/// What a finished write reports.
pub trait Written {
    /// The rows written (what `COPY` answers).
    fn rows(&self) -> u64;
}

impl Written for u64 {
    fn rows(&self) -> u64 {
        *self
    }
}
