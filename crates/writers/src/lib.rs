//! # logsql-writers
//!
//! The write wing of logsql: robot log files and datasets made from Arrow
//! record batches, without DataFusion (Cargo keeps it out: CI checks this
//! crate's dependency tree). The engine drives every writer through one
//! bridge, so each format is one [`FormatWriter`] plus one registration.
//!
//! - [`publish`]: files and directories written under a temporary name
//!   beside their target, synced, and renamed over it only when complete;
//! - [`format_writer`]: the [`FormatWriter`] trait every format implements;
//! - [`source`]: what a writer may take from the files the query read;
//! - [`columns`]: reading the columns writers share (times of any unit);
//! - [`error`]: the one error type, converted at the engine's boundary;
//! - [`messages`]: the message columns the log writers read;
//! - [`mcap`], [`bag`], [`ros2`]: MCAP files, ROS1 bags, ROS 2 bag
//!   directories;
//! - [`lerobot`]: LeRobot v3 datasets;
//! - [`mp4`]: H.264 MP4 video of camera images.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bag;
pub mod columns;
pub mod error;
pub mod format_writer;
pub mod lerobot;
pub mod mcap;
pub mod messages;
pub mod mp4;
pub mod publish;
pub mod ros2;
pub mod source;

pub use error::{Error, Result};
pub use format_writer::{FormatWriter, Progress, Written};
pub use source::{Attachment, SourceFile};
