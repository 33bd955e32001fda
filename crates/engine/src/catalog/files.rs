//! A catalog table's Parquet file, written and read through the catalog's
//! object store: zstd-compressed, with the Arrow schema embedded (so maps,
//! unsigned integers and UTC timestamps read back as written, and DuckDB,
//! pyarrow and polars read them without logsql).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{SchemaRef, TimestampNanosecondType, UInt64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::object_store::ObjectStore;
use datafusion::object_store::buffered::BufWriter;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::parquet::arrow::AsyncArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::TryStreamExt;

/// One table file being written.
pub(crate) struct TableWriter {
    writer: AsyncArrowWriter<BufWriter>,
    rows: u64,
}

impl TableWriter {
    /// Starts the file at `path`; it appears only when [`TableWriter::finish`] succeeds.
    pub(crate) fn create(
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        schema: SchemaRef,
    ) -> Result<Self> {
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let writer = AsyncArrowWriter::try_new(BufWriter::new(store, path), schema, Some(props))?;
        Ok(Self { writer, rows: 0 })
    }

    /// Appends `batch`.
    pub(crate) async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() > 0 {
            self.rows += batch.num_rows() as u64;
            self.writer.write(batch).await?;
        }
        Ok(())
    }

    /// Completes the file; returns its row count.
    pub(crate) async fn finish(self) -> Result<u64> {
        self.writer.close().await?;
        Ok(self.rows)
    }
}

/// The rows of the table file at `url`, with the columns of `schema` (the
/// table's): strings as written, not as the views DataFusion reads them into.
async fn read(
    ctx: &SessionContext,
    url: &str,
    schema: &SchemaRef,
) -> Result<datafusion::prelude::DataFrame> {
    let options = ParquetReadOptions {
        schema: Some(schema.as_ref()),
        ..Default::default()
    };
    ctx.read_parquet(url, options).await
}

/// Copies into `out` the rows of the table file at `url` (of a table with
/// `schema`) whose `location` is not in `drop`.
pub(crate) async fn copy_rows(
    ctx: &SessionContext,
    url: &str,
    schema: &SchemaRef,
    drop: &HashSet<String>,
    out: &mut TableWriter,
) -> Result<()> {
    let mut batches = read(ctx, url, schema).await?.execute_stream().await?;
    while let Some(batch) = batches.try_next().await? {
        let kept = if drop.is_empty() {
            batch
        } else {
            let locations = location_column(&batch)?;
            let keep: BooleanArray = (0..locations.len())
                .map(|i| Some(!drop.contains(locations.value(i))))
                .collect();
            filter_record_batch(&batch, &keep)?
        };
        out.write(&kept).await?;
    }
    Ok(())
}

/// Every row of the table file at `url` (of a table with `schema`), with only `columns`.
pub(crate) async fn read_columns(
    ctx: &SessionContext,
    url: &str,
    schema: &SchemaRef,
    columns: &[&str],
) -> Result<Vec<RecordBatch>> {
    read(ctx, url, schema)
        .await?
        .select_columns(columns)?
        .collect()
        .await
}

/// The `location` column every catalog table starts with.
pub(crate) fn location_column(
    batch: &RecordBatch,
) -> Result<&datafusion::arrow::array::StringArray> {
    batch
        .column_by_name("location")
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or_else(|| DataFusionError::Internal("a catalog table without location".into()))
}

/// A table batch's columns by name and type, or an error naming the table.
pub(crate) struct Columns<'a, F> {
    batch: &'a RecordBatch,
    table: &'a str,
    damaged: &'a F,
}

impl<'a, F: Fn(&str, String) -> DataFusionError> Columns<'a, F> {
    /// The columns of `batch`, a batch of `table`; `damaged` makes the
    /// error of a column missing or of another type, from the table and a message.
    pub(crate) fn new(batch: &'a RecordBatch, table: &'a str, damaged: &'a F) -> Self {
        Self {
            batch,
            table,
            damaged,
        }
    }

    fn missing(&self, name: &str) -> DataFusionError {
        (self.damaged)(
            self.table,
            format!("column {name} is missing or of another type"),
        )
    }

    /// A `Utf8` column.
    pub(crate) fn text(&self, name: &str) -> Result<&'a datafusion::arrow::array::StringArray> {
        self.batch
            .column_by_name(name)
            .and_then(|a| a.as_string_opt::<i32>())
            .ok_or_else(|| self.missing(name))
    }

    /// A `UInt64` column.
    pub(crate) fn count(&self, name: &str) -> Result<&'a datafusion::arrow::array::UInt64Array> {
        self.batch
            .column_by_name(name)
            .and_then(|a| a.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| self.missing(name))
    }

    /// A UTC nanosecond timestamp column.
    pub(crate) fn time(
        &self,
        name: &str,
    ) -> Result<&'a datafusion::arrow::array::TimestampNanosecondArray> {
        self.batch
            .column_by_name(name)
            .and_then(|a| a.as_primitive_opt::<TimestampNanosecondType>())
            .ok_or_else(|| self.missing(name))
    }
}
