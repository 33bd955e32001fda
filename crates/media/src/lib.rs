//! # logsql-media
//!
//! The pixels and points of robot logs, without DataFusion: what the
//! engine's `read_images` and `read_points` table functions, the image
//! functions and the media exports are built on.
//!
//! - [`images`]: camera images (compressed JPEG/PNG and raw pixel
//!   encodings): their size and encoding, decoding to pixels, encoding;
//! - [`points`]: `sensor_msgs/PointCloud2` and `foxglove.PointCloud`
//!   layouts turned into one Arrow column per point field, and written as
//!   PCD or PLY files;
//! - [`video`]: `rgb8` frames encoded as H.264 in an MP4 file;
//! - [`error`]: the one error type.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod images;
pub mod points;
#[cfg(feature = "video")]
pub mod video;

pub use error::{MediaError, Result};
