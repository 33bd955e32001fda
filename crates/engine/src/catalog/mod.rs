//! The catalog of a fleet: what `logsql index` learnt of each recording
//! (its summary's facts, its topics, its chunk index), kept as open Parquet
//! tables in a directory or object-store prefix beside the recordings, and
//! read back by queries without opening a recording.
//!
//! - `layout`: the catalog's files: commits (`_log/<generation>.json`, each
//!   naming one generation's table files), created atomically and never
//!   overwritten, the layout version, and the removal of old generations;
//! - `schema`: the tables' columns (`recordings`, `topics`, `chunks`);
//! - `files`: Parquet table files written and read through the object store;
//! - `snapshot`: the newest generation in memory, which scans ask before
//!   opening a file;
//! - `error`: the catalog's one error type.
//!
//! The indexing run is [`crate::ops::index`]; the SQL faces (`recordings()`,
//! `catalog_topics()`, `logsql.catalog`) are `surface::catalog_tables`.

pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod layout;
pub(crate) mod schema;
pub(crate) mod snapshot;

pub use error::CatalogError;
pub use layout::{CatalogLocation, Manifest};
pub use schema::CatalogTable;
pub use snapshot::CatalogSnapshot;
