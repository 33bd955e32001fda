//! Answers from statistics, except under `logsql.on_error = 'warn'`.
//!
//! DataFusion's `aggregate_statistics` rule answers `count(*)`, `min` and
//! `max` from exact file statistics without scanning. A log file's summary
//! states its count and time bounds exactly, so the rule may answer them,
//! and the file's bounds order files for `ORDER BY log_time`. Under `warn`,
//! every readable row is delivered and damage only warned of: the answer
//! must be the rows that decode, which a chunk that no longer decompresses
//! makes fewer than the summary says. [`UnlessWarn`] runs the rule only when
//! the query's `on_error` is not `warn`; the statistics stay exact (they
//! still bound the rows, which ordering files needs).

use std::sync::Arc;

use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::scanner::options::{LogsqlOptions, OnError};

/// DataFusion's rule of that name.
const RULE: &str = "aggregate_statistics";

/// A physical rule run unless the query's `logsql.on_error` is `warn`.
#[derive(Debug)]
pub(crate) struct UnlessWarn(Arc<dyn PhysicalOptimizerRule + Send + Sync>);

impl PhysicalOptimizerRule for UnlessWarn {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match LogsqlOptions::from_config(config).on_error {
            OnError::Warn => Ok(plan),
            _ => self.0.optimize(plan, config),
        }
    }

    fn name(&self) -> &str {
        "aggregate_statistics_unless_warn"
    }

    fn schema_check(&self) -> bool {
        self.0.schema_check()
    }
}

/// `rules` with DataFusion's `aggregate_statistics` wrapped in
/// [`UnlessWarn`]; whether it was there unwrapped.
pub(crate) fn guarded(
    rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>>,
) -> (Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>>, bool) {
    let mut changed = false;
    let rules = rules
        .into_iter()
        .map(|rule| match rule.name() == RULE {
            true => {
                changed = true;
                Arc::new(UnlessWarn(rule)) as Arc<dyn PhysicalOptimizerRule + Send + Sync>
            }
            false => rule,
        })
        .collect();
    (rules, changed)
}
