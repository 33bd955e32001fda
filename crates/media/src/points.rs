//! Point clouds: `sensor_msgs/PointCloud2` and `foxglove.PointCloud`
//! layouts turned into Arrow.
//!
//! A cloud is a byte buffer of `height` rows of `width` points, each point
//! `point_step` bytes, each row `row_step` bytes (a row may end in padding),
//! and a list of point fields, each a name, a byte offset inside the point,
//! a datatype and a count. [`PointsBuilder`] turns clouds into one Arrow
//! `list<struct>` column: one list per cloud, one struct per point, one struct
//! field per point field (a fixed-size list when its count is not 1), values
//! read at their offsets in the cloud's byte order. Values are kept as they
//! are: a NaN coordinate stays NaN.
//!
//! - [`layout`]: the datatypes, fields and cloud geometry, and their checks;
//! - [`builder`]: the Arrow column builder;
//! - [`files`]: one cloud written as a PCD or PLY file.
//!
//! Limits: a cloud may hold at most [`MAX_POINTS_PER_CLOUD`] points, whatever
//! its header claims; nothing is allocated from a size the data do not back.

pub mod builder;
pub mod files;
pub mod layout;

pub use builder::PointsBuilder;
pub use files::{CloudFormat, write_cloud};
pub use layout::{
    Cloud, MAX_FIELD_COUNT, MAX_POINTS_PER_CLOUD, PointField, PointType, check_fields, point_fields,
};
