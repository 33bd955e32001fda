//! Events: moments a team wants to keep beside its recordings (a hard brake,
//! a lost localisation, a label from a reviewer), each a device or
//! recording, a start and end time, a type and string properties.
//!
//! They live in a directory of open Parquet files: `CAT/events/` beside a
//! catalog, or any directory (`logsql --events DIR`, `SET logsql.events`).
//! Every append (`INSERT INTO events`, `logsql events add`, `logsql events
//! import`) writes new files there, staged and renamed into place when
//! complete (an object store's upload appears only when complete), so a
//! reader sees every append whole or not at all and a killed writer loses
//! only what it was writing. DuckDB, polars and pyarrow read the directory
//! as it is.
//!
//! - `schema`: the table's columns and the row type of one event;
//! - `table`: the table (`events`, `events('DIR')`): reads, and appends
//!   through DataFusion's own Parquet writer;
//! - `fill`: the plan node that completes each appended row (id, end,
//!   creation time) and refuses one without a start;
//! - `json`: events as JSON lines in the shape Foxglove's events API uses.

pub(crate) mod fill;
pub mod json;
pub mod schema;
pub(crate) mod table;

pub use schema::{Event, events_schema};
pub use table::{EventsTable, append, location_of};

/// The directory of a catalog's events, relative to the catalog.
pub const CATALOG_EVENTS_DIR: &str = "events";
