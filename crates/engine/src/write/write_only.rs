//! The file format of an output `COPY` writes and never reads (MP4 video,
//! LeRobot datasets): one [`FileFormat`] over any [`WriteOnly`] output,
//! whose reading methods refuse in the output's own words and whose writer
//! plan is the output's.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::Statistics;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::object_store::{ObjectMeta, ObjectStore};
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::ExecutionPlan;

use crate::datasource::source::LogSource;

/// An output `COPY` writes and never reads.
pub(crate) trait WriteOnly: fmt::Debug + Send + Sync + 'static {
    /// The file name extension `COPY` knows it by (`.mp4`), or empty.
    fn extension(&self) -> String;

    /// Why it cannot be read.
    fn not_read(&self) -> DataFusionError;

    /// The plan writing `input` to the target of `conf`.
    fn writer_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>>;
}

/// The [`FileFormat`] of a [`WriteOnly`] output.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOnlyFormat<W>(pub W);

#[async_trait]
impl<W: WriteOnly> FileFormat for WriteOnlyFormat<W> {
    fn get_ext(&self) -> String {
        self.0.extension()
    }

    fn get_ext_with_compression(&self, _c: &FileCompressionType) -> Result<String> {
        Ok(self.0.extension())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        Err(self.0.not_read())
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> Result<Statistics> {
        Err(self.0.not_read())
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        _conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Err(self.0.not_read())
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.0.writer_plan(input, conf, order_requirements)
    }

    /// Never scanned (`create_physical_plan` refuses); the source exists
    /// because the trait asks for one.
    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(LogSource::new(None, table_schema))
    }
}
