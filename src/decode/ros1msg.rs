//! Decoding of ROS1 message definitions (`ros1msg` schemas, `ros1` payloads).

use std::sync::Arc;

use super::{DecodeError, MessageDecoder};
use crate::model::Channel;

/// The decoder for `channel`, compiled from its schema.
pub fn decoder(channel: &Channel) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    Err(DecodeError::new(format!(
        "decoding {:?} is not implemented yet",
        channel.message_encoding
    )))
}
