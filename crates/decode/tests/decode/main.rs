//! The decoders' integration tests: every payload encoding (ROS1, CDR,
//! protobuf, JSON) decoded from the shared fixtures and from payloads built
//! here, checked against independent decodings (one test crate, one link, one
//! module per encoding).

#![forbid(unsafe_code)]

use logsql_fixtures as fixtures;

mod decode_cdr;
mod decode_common;
mod decode_json;
mod decode_protobuf;
mod decode_ros1;
