//! What a physical plan from someone else may do, checked before any of it
//! runs: for processes that execute plans or queries they did not write
//! (`logsql worker`, a server).
//!
//! [`PlanGuard::check`] walks a plan and refuses it, naming the first node
//! that breaks a rule, when
//! - a node's kind is not on the guard's allow-list (when it has one);
//! - it writes (`DataSinkExec`: every `COPY`, staged or not) and writes are
//!   not allowed, or its target is outside the write roots (when writes are
//!   allowed only below some);
//! - it scans files with another source than logsql's (Parquet, CSV, JSON,
//!   ...), when foreign scans are not allowed;
//! - a file it scans is outside the [`DataRoots`] (when there are roots).
//!
//! Decoding a plan reads no file and opens no connection (those happen when
//! a node is executed), so a check of the decoded plan, before execution,
//! stops everything a refused node would have done.

use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;

use datafusion::datasource::file_format::csv::CsvSink;
use datafusion::datasource::file_format::json::JsonSink;
use datafusion::datasource::file_format::parquet::ParquetSink;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSink, FileSinkConfig};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;

use crate::atomic_write::sink::AtomicSink;
use crate::datasource::source::LogSource;
use crate::storage::roots::DataRoots;
use crate::write::lerobot::LeRobotSink;
use crate::write::mp4::VideoSink;
use crate::write::sink::WriterSink;

/// The plan nodes a query over logs needs, by their `ExecutionPlan::name`:
/// DataFusion's relational operators, logsql's own nodes and
/// datafusion-distributed's exchange nodes. No sink, no foreign scan, no
/// recursive or streaming table: anything else is refused.
pub const QUERY_NODES: &[&str] = &[
    // scans (the data source is checked on its own)
    "DataSourceExec",
    "EmptyExec",
    "PlaceholderRowExec",
    // row operators
    "ProjectionExec",
    "FilterExec",
    "CoalesceBatchesExec",
    "CooperativeExec",
    "UnnestExec",
    "AsyncFuncExec",
    // aggregation and windows
    "AggregateExec",
    "WindowAggExec",
    "BoundedWindowAggExec",
    // order and limits
    "SortExec",
    "SortExec(TopK)",
    "PartialSortExec",
    "PartitionedTopKExec",
    "SortPreservingMergeExec",
    "GlobalLimitExec",
    "LocalLimitExec",
    // joins and unions
    "HashJoinExec",
    "NestedLoopJoinExec",
    "CrossJoinExec",
    "SortMergeJoinExec",
    "SymmetricHashJoinExec",
    "PiecewiseMergeJoinExec",
    "UnionExec",
    "InterleaveExec",
    // partitions
    "RepartitionExec",
    "CoalescePartitionsExec",
    "BufferExec",
    "OutputRequirementExec",
    // logsql
    "AsofJoinExec",
    "DamageReportExec",
    // datafusion-distributed's stages and exchanges
    "NetworkShuffleExec",
    "NetworkCoalesceExec",
    "NetworkBroadcastExec",
    "BroadcastExec",
    "ChildrenIsolatorUnionExec",
    "DistributedLeafExec",
    "SamplerExec",
];

/// The rules a plan must keep (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct PlanGuard {
    /// Node kinds allowed, by name; `None` allows every kind.
    nodes: Option<HashSet<&'static str>>,
    /// Whether nodes that write files may run.
    writes: bool,
    /// Whether scans other than logsql's may run.
    foreign_scans: bool,
    /// Where scanned files must be; `None` allows any file.
    roots: Option<Arc<DataRoots>>,
    /// Where written files must be (when writes are allowed); `None` allows
    /// any target.
    write_roots: Option<Arc<DataRoots>>,
}

impl PlanGuard {
    /// The guard of a `logsql worker`: [`QUERY_NODES`] only, no writes, no
    /// foreign scans, files inside `roots`.
    pub fn worker(roots: Arc<DataRoots>) -> Self {
        Self {
            nodes: Some(QUERY_NODES.iter().copied().collect()),
            writes: false,
            foreign_scans: false,
            roots: Some(roots),
            write_roots: None,
        }
    }

    /// A guard that allows every node kind, writes and foreign scans, with
    /// scanned files inside `roots`.
    pub fn roots_only(roots: Arc<DataRoots>) -> Self {
        Self {
            nodes: None,
            writes: true,
            foreign_scans: true,
            roots: Some(roots),
            write_roots: None,
        }
    }

    /// Allows (or refuses) nodes that write files.
    pub fn with_writes(mut self, writes: bool) -> Self {
        self.writes = writes;
        self
    }

    /// Allows writes, only to files and directories below `roots` (a sink
    /// whose targets cannot be told is refused).
    pub fn with_write_roots(mut self, roots: Arc<DataRoots>) -> Self {
        self.writes = true;
        self.write_roots = Some(roots);
        self
    }

    /// Refuses `plan` if any of its nodes breaks a rule, naming the node.
    pub fn check(&self, plan: &Arc<dyn ExecutionPlan>) -> Result<()> {
        let name = plan.name();
        if !self.writes && name == "DataSinkExec" {
            return Err(refused(name, "it writes files"));
        }
        if let (Some(write_roots), Some(exec)) =
            (&self.write_roots, plan.downcast_ref::<DataSinkExec>())
        {
            check_sink(exec.sink(), write_roots)?;
        }
        if let Some(nodes) = &self.nodes
            && !nodes.contains(name)
        {
            return Err(refused(name, "not a node a query over logs needs"));
        }
        if let Some(exec) = plan.downcast_ref::<DataSourceExec>() {
            self.check_source(exec)?;
        }
        plan.children()
            .into_iter()
            .try_for_each(|child| self.check(child))
    }

    fn check_source(&self, exec: &DataSourceExec) -> Result<()> {
        let source: &dyn Any = exec.data_source().as_ref();
        if source.is::<MemorySourceConfig>() {
            return Ok(());
        }
        let Some(config) = source.downcast_ref::<FileScanConfig>() else {
            return Err(refused("DataSourceExec", "not a file or memory scan"));
        };
        let file_source: &dyn Any = config.file_source().as_ref();
        if !self.foreign_scans && !file_source.is::<LogSource>() {
            let kind = config.file_source().file_type().to_string();
            return Err(refused(
                &format!("DataSourceExec ({kind})"),
                "only logsql's scans may run here",
            ));
        }
        let Some(roots) = &self.roots else {
            return Ok(());
        };
        for group in &config.file_groups {
            for file in group.files() {
                let location = &file.object_meta.location;
                let url = crate::storage::roots::object_url(&config.object_store_url, location)?;
                roots.check_url(&url, url.as_str())?;
            }
        }
        Ok(())
    }
}

/// Refuses a sink whose targets are not all below `roots`.
fn check_sink(sink: &dyn DataSink, roots: &DataRoots) -> Result<()> {
    let config = sink_config(sink).ok_or_else(|| {
        refused(
            "DataSinkExec",
            "a sink whose target cannot be checked against the write roots",
        )
    })?;
    for path in &config.table_paths {
        let url = url::Url::parse(path.as_str())
            .map_err(|e| refused("DataSinkExec", &format!("target {path}: {e}")))?;
        roots
            .check_url(&url, &config.original_url)
            .map_err(|e| refused("DataSinkExec", &format!("target of the write: {e}")))?;
    }
    Ok(())
}

/// The file-sink configuration (its targets) of the sinks logsql plans:
/// DataFusion's Parquet, CSV and JSON sinks, the sink of the log formats
/// (MCAP, ROS1 bag, ROS 2 bag), MP4 video and LeRobot datasets, and either
/// within the staging wrapper every local write is given.
fn sink_config(sink: &dyn DataSink) -> Option<&FileSinkConfig> {
    let any: &dyn Any = sink;
    if let Some(atomic) = any.downcast_ref::<AtomicSink>() {
        return sink_config(atomic.inner().ok()?);
    }
    if let Some(s) = any.downcast_ref::<WriterSink>() {
        return Some(s.config());
    }
    if let Some(s) = any.downcast_ref::<VideoSink>() {
        return Some(s.config());
    }
    if let Some(s) = any.downcast_ref::<LeRobotSink>() {
        return Some(s.config());
    }
    if let Some(s) = any.downcast_ref::<ParquetSink>() {
        return Some(s.config());
    }
    if let Some(s) = any.downcast_ref::<CsvSink>() {
        return Some(s.config());
    }
    // DataFusion's Arrow IPC sink is private: its writes are refused.
    any.downcast_ref::<JsonSink>().map(FileSink::config)
}

fn refused(node: &str, why: &str) -> DataFusionError {
    DataFusionError::Plan(format!("plan refused: {node}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
        ctx.sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn worker_guard_refuses_sinks_foreign_scans_and_files_outside() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("inside");
        std::fs::create_dir(&inside).unwrap();
        let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/demo.mcap");
        std::fs::copy(demo, inside.join("demo.mcap")).unwrap();
        std::fs::copy(demo, dir.path().join("outside.mcap")).unwrap();
        let roots = Arc::new(DataRoots::parse(&[inside.to_str().unwrap()]).unwrap());
        let guard = PlanGuard::worker(roots);
        let ctx = crate::session_context();

        let ok = format!(
            "SELECT topic, count(*) FROM '{}' GROUP BY topic ORDER BY topic",
            inside.join("demo.mcap").display()
        );
        guard.check(&plan(&ctx, &ok).await).unwrap();

        let outside = format!(
            "SELECT topic FROM '{}'",
            dir.path().join("outside.mcap").display()
        );
        let err = guard
            .check(&plan(&ctx, &outside).await)
            .unwrap_err()
            .to_string();
        assert!(err.contains("outside the data roots"), "{err}");

        let parquet = dir.path().join("x.parquet");
        ctx.sql(&format!("COPY (SELECT 1 AS a) TO '{}'", parquet.display()))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let foreign = format!("SELECT * FROM '{}'", parquet.display());
        let err = guard
            .check(&plan(&ctx, &foreign).await)
            .unwrap_err()
            .to_string();
        assert!(err.contains("only logsql's scans"), "{err}");

        let copy = format!(
            "COPY (SELECT 1 AS a) TO '{}'",
            inside.join("y.csv").display()
        );
        let err = guard
            .check(&plan(&ctx, &copy).await)
            .unwrap_err()
            .to_string();
        assert!(err.contains("it writes files"), "{err}");

        let values = "SELECT column1 FROM (VALUES (1), (2))";
        guard.check(&plan(&ctx, values).await).unwrap();
    }

    #[tokio::test]
    async fn bag_db3_and_lerobot_writes_are_refused_without_writes_and_outside_the_write_roots() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("inside");
        std::fs::create_dir(&inside).unwrap();
        let bag = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/demo.bag");
        let ctx = crate::session_context();
        let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data");
        let roots = Arc::new(DataRoots::parse(&[dir.path().to_str().unwrap(), data]).unwrap());
        let copies = [
            format!(
                "COPY (SELECT * FROM '{bag}') TO '{}'",
                inside.join("y.bag").display()
            ),
            format!(
                "COPY (SELECT * FROM '{bag}') TO '{}/' STORED AS DB3",
                inside.join("y").display()
            ),
            format!(
                "COPY (SELECT episode_index, log_time, file, 1.0 AS \"observation.state\" \
                 FROM time_grid('{bag}', 10)) TO '{}' STORED AS LEROBOT OPTIONS (fps '10')",
                inside.join("ds").display()
            ),
        ];
        let write_roots = Arc::new(DataRoots::parse(&[inside.to_str().unwrap()]).unwrap());
        std::fs::create_dir(dir.path().join("other")).unwrap();
        let other = dir.path().join("other");
        let elsewhere = Arc::new(DataRoots::parse(&[other.to_str().unwrap()]).unwrap());
        for copy in &copies {
            let planned = plan(&ctx, copy).await;
            let err = PlanGuard::roots_only(Arc::clone(&roots))
                .with_writes(false)
                .check(&planned)
                .unwrap_err()
                .to_string();
            assert!(err.contains("it writes files"), "{copy}: {err}");
            PlanGuard::roots_only(Arc::clone(&roots))
                .with_write_roots(Arc::clone(&write_roots))
                .check(&planned)
                .unwrap_or_else(|e| panic!("{copy}: {e}"));
            let err = PlanGuard::roots_only(Arc::clone(&roots))
                .with_write_roots(Arc::clone(&elsewhere))
                .check(&planned)
                .unwrap_err()
                .to_string();
            assert!(err.contains("target of the write"), "{copy}: {err}");
        }
    }
}
