//! logsql's integration tests: one test crate (one link of DataFusion), one module per area.

mod fixtures;
mod mcap_conformance;
