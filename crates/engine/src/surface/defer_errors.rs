//! The physical optimizer rule [`DeferScanErrors`]: every logsql scan of a
//! plan records its damage in one shared [`DamageLog`], and a
//! [`DamageReportExec`] at the root reports it once every readable row was
//! delivered (see [`crate::scanner::damage`]).

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::datasource::source::LogSource;
use crate::scanner::damage::{DamageLog, DamageReportExec};

/// The physical optimizer rule that defers scan errors to the end of the query
/// (see the module documentation). Registered last by [`crate::register`].
#[derive(Debug, Default)]
pub(crate) struct DeferScanErrors;

impl PhysicalOptimizerRule for DeferScanErrors {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if plan.downcast_ref::<DamageReportExec>().is_some() {
            return Ok(plan);
        }
        let log = Arc::new(DamageLog::default());
        let rewritten = plan.transform_up(|node| {
            let Some(exec) = node.downcast_ref::<DataSourceExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some((config, source)) = exec.downcast_to_file_source::<LogSource>() else {
                return Ok(Transformed::no(node));
            };
            let mut config = config.clone();
            config.file_source = Arc::new(source.with_damage_log(Arc::clone(&log)));
            let exec = exec.clone().with_data_source(Arc::new(config));
            Ok(Transformed::yes(Arc::new(exec) as Arc<dyn ExecutionPlan>))
        })?;
        if !rewritten.transformed {
            return Ok(rewritten.data);
        }
        Ok(Arc::new(DamageReportExec::new(rewritten.data, log)))
    }

    fn name(&self) -> &str {
        "logsql_defer_scan_errors"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn physical(
        ctx: &datafusion::prelude::SessionContext,
        sql: &str,
    ) -> Arc<dyn ExecutionPlan> {
        ctx.sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn only_plans_with_logsql_scans_get_a_report_root_once() {
        let ctx = crate::session_context();
        let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/demo.mcap");
        let plan = physical(
            &ctx,
            &format!("SELECT count(*) FROM '{demo}' WHERE length(data) > 0"),
        )
        .await;
        assert_eq!(plan.name(), "DamageReportExec");
        // The rule leaves a plan it already wrapped alone.
        let again = DeferScanErrors
            .optimize(Arc::clone(&plan), &ConfigOptions::default())
            .unwrap();
        assert!(Arc::ptr_eq(&plan, &again));
        let plain = physical(&ctx, "SELECT 1").await;
        assert_ne!(plain.name(), "DamageReportExec");
    }
}
