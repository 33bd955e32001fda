//! The physical optimizer rule [`AtomicCopy`]: the sink of every `COPY ... TO`
//! (and `INSERT INTO` a listing table) is wrapped in an [`AtomicSink`], which
//! runs DataFusion's own writer (Parquet, CSV, JSON, Arrow) with every object
//! store replaced by a [`StagingStore`]: the files it puts are staged (beside
//! their local targets, or in the temporary directory for another store) and
//! published (renamed over, or uploaded) only when the writer succeeded; on an
//! error (a failing expression, a type the format cannot hold) or a cancelled
//! query they are removed and the old targets are left as they were.
//! Partitioned output and every format option work unchanged, since the writer
//! itself is untouched. The MCAP and MP4 sinks write their file themselves
//! (see `datasource::output`; wrapping them changes nothing).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, SendableRecordBatchStream,
};

use super::staging::{StagingRegistry, StagingStore};

/// The rule wrapping every file sink in an [`AtomicSink`] (see the module
/// documentation). Registered by [`crate::register`].
#[derive(Debug, Default)]
pub(crate) struct AtomicCopy;

impl PhysicalOptimizerRule for AtomicCopy {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(exec) = node.downcast_ref::<DataSinkExec>() else {
                return Ok(Transformed::no(node));
            };
            if exec.sink().is::<AtomicSink>() {
                return Ok(Transformed::no(node));
            }
            let sink = Arc::new(AtomicSink {
                schema: Arc::clone(exec.sink().schema()),
                exec: Arc::clone(&node),
            });
            let wrapped =
                DataSinkExec::new(Arc::clone(exec.input()), sink, exec.sort_order().clone());
            Ok(Transformed::yes(Arc::new(wrapped) as Arc<dyn ExecutionPlan>))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "logsql_atomic_copy"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A file sink whose local files are published only when it succeeds.
pub(crate) struct AtomicSink {
    /// The `DataSinkExec` of the wrapped sink, as planned.
    exec: Arc<dyn ExecutionPlan>,
    /// The wrapped sink's schema.
    schema: SchemaRef,
}

impl AtomicSink {
    /// The wrapped sink.
    pub(crate) fn inner(&self) -> Result<&dyn DataSink> {
        self.exec
            .downcast_ref::<DataSinkExec>()
            .map(DataSinkExec::sink)
            .ok_or_else(|| DataFusionError::Internal("AtomicSink without a DataSinkExec".into()))
    }
}

impl fmt::Debug for AtomicSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner() {
            Ok(inner) => write!(f, "AtomicSink({inner:?})"),
            Err(_) => write!(f, "AtomicSink"),
        }
    }
}

impl DisplayAs for AtomicSink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner() {
            Ok(inner) => inner.fmt_as(t, f),
            Err(_) => write!(f, "AtomicSink"),
        }
    }
}

#[async_trait]
impl DataSink for AtomicSink {
    fn metrics(&self) -> Option<MetricsSet> {
        self.inner().ok()?.metrics()
    }

    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let inner = self.inner()?;
        let env = context.runtime_env();
        let local = env.object_store(ObjectStoreUrl::local_filesystem())?;
        // A store registered for file:// other than the plain root file system
        // (a prefix, a test double) is written as it is.
        if local.to_string() != "LocalFileSystem(file:///)" {
            return inner.write_all(data, context).await;
        }
        let staging = Arc::new(StagingStore::new(local));
        let staged = staging.staged();
        let mut runtime = (*env).clone();
        runtime.object_store_registry = Arc::new(StagingRegistry::new(
            Arc::clone(&env.object_store_registry),
            staging,
        ));
        let staging_context = crate::task::with_runtime(context, Arc::new(runtime));
        let written = inner.write_all(data, &staging_context).await;
        let set = std::mem::take(&mut *staged.lock());
        match written {
            Ok(rows) => {
                set.publish().await.map_err(|e| {
                    DataFusionError::Execution(format!("writing the COPY output: {e}"))
                })?;
                Ok(rows)
            }
            // Dropping the set removes its files.
            Err(e) => Err(e),
        }
    }
}
