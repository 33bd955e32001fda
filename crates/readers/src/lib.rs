//! # logsql
//!
//! SQL over robot and simulator log files with Apache DataFusion.
//!
//! Each log format is a DataFusion file format whose `messages` table streams
//! `RecordBatch`es, with projection, time and topic pushdown into the file's
//! own chunk index. One call registers everything on a `SessionContext`:
//!
//! ```no_run
//! # #[cfg(feature = "datafusion")]
//! # async fn demo() -> datafusion::error::Result<()> {
//! let ctx = logsql::session_context();
//! let df = ctx.sql("SELECT topic, count(*) FROM 'run.mcap' GROUP BY topic").await?;
//! df.show().await?;
//! # Ok(()) }
//! ```
//!
//! Layers, bottom up:
//! - [`formats`]: byte-level readers (no DataFusion), one module per format;
//! - [`model`] and [`io`]: the plain data and random-access reads they share;
//! - [`proto_syntax`]: the protobuf-library guard readers and decoders share;
//! - [`descriptors`] and [`ros2_interfaces`]: schemas from outside the file
//!   (protobuf descriptor sets; ROS 2 `.msg` definitions by type name);
//! - [`decode`]: payloads to typed Arrow columns (ROS1, CDR, protobuf, JSON);
//! - `engine` (feature `datafusion`): the one scan engine and the DataFusion glue.

#![warn(missing_docs)]

pub mod compression;
pub mod decode;
pub mod descriptors;
pub mod error;
pub mod formats;
pub mod huge_pages;
pub mod io;
pub mod model;
pub mod partial;
pub mod proto_syntax;
pub mod recycle;
pub mod ros2_interfaces;
pub mod table;

pub use error::{Error, Result};

#[cfg(feature = "datafusion")]
pub mod engine;

#[cfg(feature = "datafusion")]
pub use engine::{SessionContextExt, register, session_context, session_context_with_config, sql};
