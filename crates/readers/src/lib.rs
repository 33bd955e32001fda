//! # logsql-readers
//!
//! The byte-level readers of logsql: every log format's file structure
//! (records, chunks, indexes, summaries) read into plain data, without
//! DataFusion. The decoders (`logsql-decode`) and the SQL engine (`logsql`)
//! are built on it.
//!
//! - [`formats`]: one module per format (MCAP, ROS1 bag, ROS 2 bag, Apollo
//!   record, BDDF, CARLA) behind one [`formats::FormatReader`] trait;
//! - [`model`] and [`io`]: the plain data and random-access reads they share;
//! - [`compression`], [`byte_buf`], [`recycle`]: chunk decompression and
//!   the buffers it fills, shared with Arrow without a copy;
//! - [`shared_chunks`]: decompressed chunks handed between the scans of one
//!   file that run together;
//! - [`table`]: the typed side tables some formats offer;
//! - [`proto_syntax`]: the protobuf-library guard readers and decoders share;
//! - [`ros2_interfaces`]: ROS 2 `.msg` definitions by type name;
//! - [`doctor`]: the health checks of one file (`logsql doctor`);
//! - [`error`]: the one error type.

#![warn(missing_docs)]

pub mod byte_buf;
pub mod compression;
pub mod doctor;
pub mod error;
pub mod formats;
pub mod io;
pub mod limits;
pub mod model;
pub mod proto_syntax;
pub mod recycle;
pub mod ros2_interfaces;
pub mod shared_chunks;
pub mod table;

pub use error::{Error, Result};
