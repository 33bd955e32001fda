//! Coordinate frames of robot logs, without DataFusion.
//!
//! Recordings carry the transforms between their coordinate frames as
//! messages (`tf2_msgs/TFMessage` on `/tf` and `/tf_static`, Foxglove's
//! `FrameTransform`): each says where a child frame is in its parent at a
//! stamp. [`TransformBuffer`] holds a recording's transforms and answers
//! "where is frame S in frame T at time t" ([`TransformBuffer::lookup`]) the
//! way tf2's `lookupTransform` does: the chain resolved through the tree,
//! static links valid at every time, each dynamic link interpolated between
//! its two nearest stamps (linear translation, spherical rotation), and a
//! typed [`LookupError`] where the chain is broken or the time lies outside a
//! link's data. [`math`] holds the rigid-body arithmetic.

#![forbid(unsafe_code)]

pub mod buffer;
pub mod error;
pub mod math;

pub use buffer::{FrameId, Rejected, TransformBuffer, TransformBufferBuilder};
pub use error::LookupError;
pub use math::{Pose, Quat, Vec3};
