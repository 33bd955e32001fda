//! A LeRobot dataset's data files: the rows of the open episode, gathered
//! ([`DataRows::push`]), staged ([`DataStage`]) until the episode is kept,
//! then appended to `data/chunk-XXX/file-XXX.parquet` (several episodes a
//! file; a file is closed at the first episode end past its size limit).

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, FixedSizeListBuilder, Float32Builder, StringBuilder, StructBuilder,
};
use arrow_array::{ArrayRef, Float32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;

use super::columns::{FeatureKind, NumericShape};
use super::files::{chunk_file, next_file, parquet_writer, png_fields};
use super::options::ImageStorage;
use super::staging::DataStage;
use crate::error::{Error, Result};

/// Data rows buffered before they are written (fewer when frames are
/// stored as PNG in the data files).
const ROWS_PER_WRITE: usize = 1024;
const IMAGE_ROWS_PER_WRITE: usize = 64;

/// The five columns LeRobot adds to each frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrameIndices {
    /// Seconds into the episode.
    pub timestamp: f32,
    /// The frame in its episode.
    pub frame_index: i64,
    /// The dataset's episode index.
    pub episode_index: i64,
    /// The frame in the dataset.
    pub index: i64,
    /// Its task.
    pub task_index: i64,
}

impl FrameIndices {
    /// The five values, as the statistics take them.
    pub fn values(&self) -> [f64; 5] {
        [
            f64::from(self.timestamp),
            self.frame_index as f64,
            self.episode_index as f64,
            self.index as f64,
            self.task_index as f64,
        ]
    }
}

/// Data rows not yet written.
#[derive(Default)]
struct Pending {
    numeric: Vec<Vec<f32>>,
    images: Vec<Vec<Option<Vec<u8>>>>,
    timestamp: Vec<f32>,
    frame_index: Vec<i64>,
    episode_index: Vec<i64>,
    index: Vec<i64>,
    task_index: Vec<i64>,
}

/// The data file being written.
struct DataFile {
    writer: ArrowWriter<File>,
    chunk: u64,
    index: u64,
}

/// The dataset's data rows (see the module documentation).
pub struct DataRows {
    root: PathBuf,
    images: ImageStorage,
    chunks_size: u64,
    /// The features' names and kinds, in column order.
    features: Vec<(String, FeatureKind)>,
    pending: Option<Pending>,
    /// The open episode's rows.
    stage: Option<DataStage>,
    file: Option<DataFile>,
    /// (chunk, file) of the next data file.
    next: (u64, u64),
}

fn data_err(e: impl std::fmt::Display) -> Error {
    Error::Write(format!("writing a LeRobot data file: {e}"))
}

impl DataRows {
    /// The data rows of a dataset under `root` with `features`.
    pub fn new(
        root: PathBuf,
        images: ImageStorage,
        chunks_size: u64,
        features: Vec<(String, FeatureKind)>,
    ) -> Self {
        Self {
            root,
            images,
            chunks_size,
            features,
            pending: None,
            stage: None,
            file: None,
            next: (0, 0),
        }
    }

    fn pending(&mut self) -> &mut Pending {
        let n = self.features.len();
        self.pending.get_or_insert_with(|| Pending {
            numeric: vec![Vec::new(); n],
            images: vec![Vec::new(); n],
            ..Pending::default()
        })
    }

    /// Adds feature `k`'s values of the row being gathered.
    pub fn push_numeric(&mut self, k: usize, values: &[f64]) {
        self.pending().numeric[k].extend(values.iter().map(|v| *v as f32));
    }

    /// Adds camera `k`'s PNG of the row being gathered.
    pub fn push_png(&mut self, k: usize, png: Vec<u8>) {
        self.pending().images[k].push(Some(png));
    }

    /// Completes the row being gathered with its indices; the rows are
    /// staged every so many. `dims`: each feature's vector length.
    pub fn push_row(&mut self, row: FrameIndices, dims: &[Option<usize>]) -> Result<()> {
        let p = self.pending();
        p.timestamp.push(row.timestamp);
        p.frame_index.push(row.frame_index);
        p.episode_index.push(row.episode_index);
        p.index.push(row.index);
        p.task_index.push(row.task_index);
        let rows = p.timestamp.len();
        let limit = if self.images == ImageStorage::Parquet
            && self.features.iter().any(|(_, k)| *k == FeatureKind::Camera)
        {
            IMAGE_ROWS_PER_WRITE
        } else {
            ROWS_PER_WRITE
        };
        if rows >= limit {
            self.flush(dims)?;
        }
        Ok(())
    }

    /// The data files' schema (known once every feature's shape is).
    fn schema(&self, dims: &[Option<usize>]) -> SchemaRef {
        let mut fields: Vec<Field> = self
            .features
            .iter()
            .zip(dims)
            .filter_map(|((name, kind), dims)| match kind {
                FeatureKind::Numeric(NumericShape::Scalar) => {
                    Some(Field::new(name, DataType::Float32, true))
                }
                FeatureKind::Numeric(_) => Some(Field::new(
                    name,
                    DataType::FixedSizeList(
                        Arc::new(Field::new("element", DataType::Float32, true)),
                        dims.unwrap_or(0) as i32,
                    ),
                    true,
                )),
                FeatureKind::Camera if self.images == ImageStorage::Parquet => {
                    Some(Field::new(name, DataType::Struct(png_fields()), true))
                }
                FeatureKind::Camera => None,
            })
            .collect();
        fields.push(Field::new("timestamp", DataType::Float32, true));
        for name in ["frame_index", "episode_index", "index", "task_index"] {
            fields.push(Field::new(name, DataType::Int64, true));
        }
        Arc::new(Schema::new(fields))
    }

    /// Stages the rows gathered.
    pub fn flush(&mut self, dims: &[Option<usize>]) -> Result<()> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        if p.timestamp.is_empty() {
            return Ok(());
        }
        let schema = self.schema(dims);
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (k, ((_, kind), dims)) in self.features.iter().zip(dims).enumerate() {
            match kind {
                FeatureKind::Numeric(NumericShape::Scalar) => {
                    columns.push(Arc::new(Float32Array::from(p.numeric[k].clone())));
                }
                FeatureKind::Numeric(_) => {
                    let dims = dims.unwrap_or(0);
                    let mut b = FixedSizeListBuilder::new(Float32Builder::new(), dims as i32)
                        .with_field(Arc::new(Field::new("element", DataType::Float32, true)));
                    for chunk in p.numeric[k].chunks(dims.max(1)) {
                        b.values().append_slice(chunk);
                        b.append(true);
                    }
                    columns.push(Arc::new(b.finish()));
                }
                FeatureKind::Camera if self.images == ImageStorage::Parquet => {
                    let mut b = StructBuilder::new(
                        png_fields(),
                        vec![
                            Box::new(BinaryBuilder::new()),
                            Box::new(StringBuilder::new()),
                        ],
                    );
                    for png in &p.images[k] {
                        b.field_builder::<BinaryBuilder>(0)
                            .expect("bytes")
                            .append_option(png.as_deref());
                        b.field_builder::<StringBuilder>(1)
                            .expect("path")
                            .append_null();
                        b.append(true);
                    }
                    columns.push(Arc::new(b.finish()));
                }
                FeatureKind::Camera => {}
            }
        }
        columns.push(Arc::new(Float32Array::from(p.timestamp)));
        for v in [p.frame_index, p.episode_index, p.index, p.task_index] {
            columns.push(Arc::new(Int64Array::from(v)));
        }
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns)?;
        let stage = match &mut self.stage {
            Some(s) => s,
            None => self.stage.insert(DataStage::create(
                self.root.join(".episode-data.arrows"),
                &schema,
            )?),
        };
        stage.write(&batch)
    }

    /// Appends the kept episode's rows to the data file; returns the
    /// (chunk, file) they went to.
    pub fn commit(&mut self, dims: &[Option<usize>]) -> Result<(u64, u64)> {
        self.flush(dims)?;
        let at = match &self.file {
            Some(d) => (d.chunk, d.index),
            None => self.next,
        };
        let Some(stage) = self.stage.take() else {
            return Ok(at);
        };
        let schema = self.schema(dims);
        let data = match &mut self.file {
            Some(d) => d,
            None => {
                let (chunk, index) = self.next;
                let path = self
                    .root
                    .join(format!("data/{}.parquet", chunk_file(chunk, index)));
                let writer = parquet_writer(&path, schema)?;
                self.file.insert(DataFile {
                    writer,
                    chunk,
                    index,
                })
            }
        };
        stage.drain(|batch| data.writer.write(batch).map_err(data_err))?;
        Ok(at)
    }

    /// Forgets the open episode's rows (it is skipped).
    pub fn discard(&mut self) {
        self.pending = None;
        if let Some(stage) = self.stage.take() {
            stage.discard();
        }
    }

    /// Closes the data file when it is past `limit` bytes.
    pub fn close_if_full(&mut self, limit: u64) -> Result<()> {
        let full = self.file.as_ref().is_some_and(|d| {
            d.writer.bytes_written() + d.writer.in_progress_size() >= limit as usize
        });
        if full {
            self.close()?;
        }
        Ok(())
    }

    /// Closes the data file (the next episode starts a new one).
    pub fn close(&mut self) -> Result<()> {
        if let Some(d) = self.file.take() {
            d.writer.close().map_err(data_err)?;
            self.next = next_file((d.chunk, d.index), self.chunks_size);
        }
        Ok(())
    }
}
