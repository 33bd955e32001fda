//! logsql's integration tests: one test crate (one link of DataFusion), one module per area.

mod fixtures;
#[cfg(feature = "datafusion")]
mod engine_mcap;
mod mcap_conformance;
