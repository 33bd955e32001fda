//! logsql's integration tests: one test crate (one link of DataFusion), one module per area.

#![forbid(unsafe_code)]

mod asof;
/// The ROS bag writer of the tests (the readers' tests use all of it).
#[allow(dead_code)]
mod bag_writer;
mod bddf_sql;
/// Facts of the CARLA fixtures, shared with the reader's tests.
#[path = "../../crates/readers/tests/readers/carla_facts.rs"]
#[allow(dead_code)]
mod carla_facts;
mod carla_sql;
mod catalog;
mod check;
mod cli;
mod cli_cameras;
mod cli_damage;
mod cli_errors;
mod cli_images;
mod cli_plot;
mod cli_repair;
mod cli_safe_writes;
#[cfg(unix)]
mod cli_shell;
#[cfg(unix)]
mod cli_terminal;
mod cli_timeline;
mod cli_wild;
mod copy_bag;
mod engine_apollo;
mod engine_bag;
mod engine_bddf;
mod engine_cache;
mod engine_carla;
mod engine_concurrency;
mod engine_damage;
mod engine_decode;
mod engine_fleet;
mod engine_mcap;
mod engine_ros2;
mod engine_semantics;
mod events;
use logsql_fixtures as fixtures;
/// The BDDF generator of the benchmarks, for files of several chunks.
#[path = "../../examples/gen_bddf.rs"]
#[allow(dead_code)]
mod gen_bddf;
/// The benchmark recording generator (the demo file's), for generated fleets.
#[path = "../../benches/support/gen.rs"]
mod gen_support;
mod hostile_inputs;
mod lerobot;
mod mcap_writer;
mod mcp;
mod moments;
mod ops;
mod points;
mod queries;
/// The robot recording generator of the LeRobot tests and benchmark.
#[path = "../../benches/support/robot.rs"]
mod robot;
/// The rosbag2 databases of the reader's tests.
#[path = "../../crates/readers/tests/readers/ros2_db3.rs"]
#[allow(dead_code)]
mod ros2_db3;
mod self_contained;
mod serve;
#[cfg(feature = "flight")]
mod serve_flight;
mod serve_hostile;
mod shared_chunks;
mod slt;
mod sql;
mod sql_sweep;
mod summary_counts;
mod time_order;
mod transforms;
mod walk_sweep;
