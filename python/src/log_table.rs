//! [`LogTable`]: a logsql table handed to datafusion-python through
//! datafusion-ffi, and the bridge that keeps its planning and execution in
//! logsql's own session.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Column, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, SessionState, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::ProjectionExpr;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion::prelude::SessionContext;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_python_util::ffi_logical_codec_from_pycapsule;
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::RUNTIME;

/// A log-file table for `SessionContext.register_table(name, table)` of
/// datafusion-python (any object with `__datafusion_table_provider__`).
#[pyclass(name = "LogTable", module = "logsql._native", frozen)]
pub struct LogTable {
    provider: Arc<dyn TableProvider>,
    ctx: SessionContext,
    description: String,
}

impl LogTable {
    /// `provider`, planned and run in `ctx`; `description` for `repr()`.
    pub fn new(provider: Arc<dyn TableProvider>, ctx: SessionContext, description: String) -> Self {
        Self {
            provider,
            ctx,
            description,
        }
    }
}

#[pymethods]
impl LogTable {
    /// The table as a datafusion-ffi `FFI_TableProvider` capsule, for the
    /// datafusion-python `session` that registers it.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = ffi_logical_codec_from_pycapsule(session, None)?;
        let bridge: Arc<dyn TableProvider> = Arc::new(InOwnSession {
            inner: Arc::clone(&self.provider),
            ctx: self.ctx.clone(),
        });
        let provider = FFI_TableProvider::new_with_ffi_codec(
            bridge,
            true,
            Some(RUNTIME.handle().clone()),
            codec,
        );
        PyCapsule::new_with_value(py, provider, c"datafusion_table_provider")
    }

    /// Column names and Arrow types, as `(name, type)` pairs.
    fn columns(&self) -> Vec<(String, String)> {
        self.provider
            .schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().to_string()))
            .collect()
    }

    fn __repr__(&self) -> String {
        format!("logsql.{}", self.description)
    }
}

/// A table whose scans plan in logsql's session, whatever session asks: the
/// session a foreign host passes through datafusion-ffi has a default runtime
/// (no object stores) and none of logsql's options, and its physical optimizer
/// cannot push filters through the FFI boundary. So the host's filters,
/// projection and limit are planned here, where DataFusion's optimizer pushes
/// them into logsql's scan (time and topic pruning, exact filtering), and the
/// host is told the filters are applied exactly.
struct InOwnSession {
    inner: Arc<dyn TableProvider>,
    ctx: SessionContext,
}

impl fmt::Debug for InOwnSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InOwnSession")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl TableProvider for InOwnSession {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // The host polls this future on its own tokio (another copy, in its
        // own library): planning (listing, summaries) runs on logsql's.
        let (inner, ctx) = (Arc::clone(&self.inner), self.ctx.clone());
        let (projection, filters) = (projection.cloned(), filters.to_vec());
        RUNTIME
            .spawn(async move { plan_scan(inner, ctx, projection, filters, limit).await })
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Exact; filters.len()])
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }
}

/// `SELECT <projection> FROM inner WHERE <filters> LIMIT <limit>`, planned and
/// optimized by logsql's session.
async fn plan_scan(
    inner: Arc<dyn TableProvider>,
    ctx: SessionContext,
    projection: Option<Vec<usize>>,
    filters: Vec<Expr>,
    limit: Option<usize>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let schema = inner.schema();
    let mut df = ctx.read_table(inner)?;
    if let Some(predicate) = filters.into_iter().reduce(Expr::and) {
        df = df.filter(predicate)?;
    }
    let columns = |indices: &[usize]| -> Vec<Expr> {
        indices
            .iter()
            .map(|&i| Expr::Column(Column::new_unqualified(schema.field(i).name())))
            .collect()
    };
    let no_columns = projection.as_ref().is_some_and(Vec::is_empty);
    df = match &projection {
        // Rows without columns (`count(*)`): the cheapest column, dropped below.
        Some(p) if p.is_empty() => df.select(columns(&[0]))?,
        Some(p) => df.select(columns(p))?,
        None => df,
    };
    if let Some(n) = limit {
        df = df.limit(0, Some(n))?;
    }
    let state = ctx.state();
    let mut plan = df.create_physical_plan().await?;
    if no_columns {
        plan = Arc::new(ProjectionExec::try_new(Vec::<ProjectionExpr>::new(), plan)?);
    }
    Ok(Arc::new(InOwnContext::new(plan, &state)))
}

/// A logsql scan plan that executes with logsql's task context (its object
/// stores and options), not the foreign host's. A leaf to the host.
#[derive(Debug)]
struct InOwnContext {
    inner: Arc<dyn ExecutionPlan>,
    ctx: Arc<TaskContext>,
}

impl InOwnContext {
    fn new(inner: Arc<dyn ExecutionPlan>, state: &SessionState) -> Self {
        Self {
            inner,
            ctx: Arc::new(TaskContext::from(state)),
        }
    }
}

impl DisplayAs for InOwnContext {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "LogsqlScan: ")?;
        self.inner.fmt_as(t, f)
    }
}

impl ExecutionPlan for InOwnContext {
    fn name(&self) -> &str {
        "LogsqlScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        // The stream runs on logsql's runtime (its readers spawn blocking
        // tasks there) and hands batches over a bounded channel to the
        // host, which polls on its own.
        let _entered = RUNTIME.enter();
        let mut stream = self.inner.execute(partition, Arc::clone(&self.ctx))?;
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        RUNTIME.spawn(async move {
            while let Some(batch) = stream.next().await {
                if tx.send(batch).await.is_err() {
                    break;
                }
            }
        });
        let batches =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batches,
        )))
    }

    /// The scan's metrics (`chunks_read`, `bytes_read`, ...): those of the
    /// `DataSourceExec` inside, which the host cannot see.
    fn metrics(&self) -> Option<MetricsSet> {
        let mut plan = &self.inner;
        loop {
            if plan.name() == "DataSourceExec" {
                return plan.metrics();
            }
            match plan.children().as_slice() {
                [only] => plan = *only,
                _ => return self.inner.metrics(),
            }
        }
    }
}
