//! Decoding of ROS 2 message definitions (`ros2msg` schemas) and CDR payloads (`cdr`).

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
