//! The SQL surface: `SELECT ... FROM 'path'` ([`url_table`]), the table
//! functions ([`table_functions`], [`typed_tables`], [`read_topic`],
//! [`read_points`], [`read_images`], [`time_grid`], [`intervals`], [`transforms`], [`metadata_cache`]) and the message-header counts `topics()` shares with
//! `logsql info` ([`header_walk`]), scalar functions ([`functions`], [`image_functions`], [`tf_lookup`], [`pose_functions`]) and the cap on
//! one value a function makes ([`value_caps`]), `ASOF
//! JOIN` (the crate `logsql_asof`, installed by [`crate::register`]) and the
//! physical rule that reads log tables in file order ([`file_order`]), and the
//! one that defers scan errors to the query's root (`defer_errors`), and
//! DataFusion's answers from statistics kept from `warn` scans
//! (`statistics_answers`). The top
//! layer: nothing below imports it.

pub(crate) mod cap_rewrite;
pub mod catalog_tables;
pub(crate) mod defer_errors;
pub mod file_order;
pub mod functions;
pub mod header_walk;
pub mod image_functions;
pub mod intervals;
pub mod metadata_cache;
pub mod pose_functions;
pub mod read_images;
pub mod read_points;
pub mod read_topic;
pub(crate) mod statistics_answers;
pub mod table_functions;
pub mod tf_lookup;
pub mod time_grid;
pub mod transforms;
pub mod typed_tables;
pub mod url_table;
pub mod value_caps;
