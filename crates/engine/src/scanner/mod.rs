//! The scan core: what a scan reads ([`target`]), its plan and collector
//! ([`scan`]), which chunks it reads (`chunk_choice`) and one file's scan
//! step by step (`file_scan`), the batch builders ([`batch`], `table_batch`, `decoded_batch`),
//! pruning ([`predicate`]), rows answered from a file's summary
//! (`summary_rows`), declared `log_time` order ([`time_order`]), newest-first
//! reads and run-time chunk pruning ([`newest_first`]), decompressed chunks
//! shared by the scans of one file ([`shared_chunks`]), the damage
//! log ([`damage`]), the `messages` schema ([`schema`]), the session options
//! ([`options`]), errors ([`error`]) and what plan nodes of one input share
//! ([`unary`]). It imports only [`super::storage`].

pub mod batch;
pub(crate) mod chunk_choice;
pub mod damage;
pub(crate) mod decoded_batch;
pub mod error;
pub(crate) mod file_scan;
pub mod newest_first;
pub mod options;
pub mod predicate;
pub mod scan;
pub mod schema;
pub mod shared_chunks;
pub(crate) mod summary_rows;
pub(crate) mod table_batch;
pub mod target;
pub mod time_order;
pub mod unary;
