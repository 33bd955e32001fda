//! The files of a LeRobot dataset, as the data and video writers and
//! `meta/` make them: LeRobot's `chunk-XXX/file-XXX` numbering, Parquet
//! files as LeRobot writes them, the image value's fields, and the error of
//! a file that cannot be written.

use std::fs::File;
use std::path::Path;

use arrow_schema::{DataType, Field, Fields, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

/// The error of writing `path`.
pub fn io(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Write(format!("writing {}: {e}", path.display()))
}

/// LeRobot's next (chunk, file): files count up to `chunks_size` a chunk.
pub fn next_file((chunk, file): (u64, u64), chunks_size: u64) -> (u64, u64) {
    if file + 1 >= chunks_size {
        (chunk + 1, 0)
    } else {
        (chunk, file + 1)
    }
}

/// `chunk-XXX/file-XXX`.
pub fn chunk_file(chunk: u64, file: u64) -> String {
    format!("chunk-{chunk:03}/file-{file:03}")
}

/// The fields of a LeRobot image value in a data file (Hugging Face
/// `datasets.Image`).
pub fn png_fields() -> Fields {
    Fields::from(vec![
        Field::new("bytes", DataType::Binary, true),
        Field::new("path", DataType::Utf8, true),
    ])
}

/// Creates `path` and the directories above it. The file must not exist
/// (nor a link in its place): every file of a dataset is new, in a
/// directory the writer made, so one already there is never followed or
/// overwritten.
pub fn create(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    create_new(path).map_err(|e| io(path, e))
}

/// Opens `path` for writing, failing if anything (a file, a link) is there.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    File::options().write(true).create_new(true).open(path)
}

/// A Parquet writer (snappy, as LeRobot writes) of `schema` at `path`.
pub fn parquet_writer(path: &Path, schema: SchemaRef) -> Result<ArrowWriter<File>> {
    let file = create(path)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_count_up_to_chunks_size_a_chunk() {
        assert_eq!(next_file((0, 0), 1000), (0, 1));
        assert_eq!(next_file((0, 999), 1000), (1, 0));
        assert_eq!(next_file((2, 0), 1), (3, 0));
        assert_eq!(chunk_file(1, 12), "chunk-001/file-012");
    }
}
