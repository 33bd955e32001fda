//! logsql's integration tests: one test crate (one link of DataFusion), one module per area.

mod apollo_reader;
#[cfg(feature = "datafusion")]
mod asof;
mod bag_reader;
mod bag_writer;
mod bddf_reader;
mod carla_reader;
#[cfg(feature = "cli")]
mod cli;
#[cfg(feature = "cli")]
mod cli_damage;
#[cfg(feature = "cli")]
mod cli_errors;
#[cfg(feature = "cli")]
mod cli_plot;
#[cfg(all(feature = "cli", unix))]
mod cli_shell;
#[cfg(feature = "cli")]
mod cli_timeline;
#[cfg(feature = "cli")]
mod cli_wild;
mod decode_cdr;
mod decode_common;
mod decode_json;
mod decode_protobuf;
mod decode_ros1;
#[cfg(feature = "datafusion")]
mod engine_apollo;
#[cfg(feature = "datafusion")]
mod engine_bag;
#[cfg(feature = "datafusion")]
mod engine_bddf;
#[cfg(feature = "datafusion")]
mod engine_cache;
#[cfg(feature = "datafusion")]
mod engine_carla;
#[cfg(feature = "datafusion")]
mod engine_concurrency;
#[cfg(feature = "datafusion")]
mod engine_damage;
#[cfg(feature = "datafusion")]
mod engine_decode;
#[cfg(feature = "datafusion")]
mod engine_fleet;
#[cfg(feature = "datafusion")]
mod engine_mcap;
#[cfg(feature = "datafusion")]
mod engine_ros2;
#[cfg(feature = "datafusion")]
mod engine_semantics;
mod fixtures;
/// The BDDF generator of the benchmarks, for files of several chunks.
#[path = "../../examples/gen_bddf.rs"]
#[allow(dead_code)]
mod gen_bddf;
/// The benchmark recording generator (the demo file's), for generated fleets.
#[cfg(feature = "datafusion")]
#[path = "../../benches/support/gen.rs"]
mod gen_support;
mod hardening_alloc;
mod hardening_sweeps;
mod mcap_conformance;
mod mcap_samples;
#[cfg(feature = "datafusion")]
mod mcap_writer;
#[cfg(feature = "datafusion")]
mod queries;
mod ros2_reader;
#[cfg(feature = "datafusion")]
mod self_contained;
#[cfg(feature = "datafusion")]
mod slt;
#[cfg(feature = "datafusion")]
mod sql;
#[cfg(feature = "datafusion")]
mod summary_counts;
#[cfg(feature = "datafusion")]
mod time_order;
