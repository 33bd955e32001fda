//! The readers' integration tests: every format's reader on the shared
//! fixtures and on files crafted here, without the engine (one test crate,
//! one link, one module per area). Tests of the readers through SQL live in
//! the root package's `tests/it/`.

#![forbid(unsafe_code)]

/// The ROS bag 2.0 writer of the tests (shared with `tests/it/`).
#[path = "../../../../tests/it/bag_writer.rs"]
mod bag_writer;
mod carla_facts;
mod ros2_db3;

use logsql_fixtures as fixtures;

mod apollo_reader;
mod bag_reader;
mod bddf_reader;
mod carla_reader;
mod hardening_alloc;
mod hardening_sweeps;
mod mcap_conformance;
mod mcap_samples;
mod ros2_reader;
