//! Message definitions for `read_topic` on bags that do not store them.
//!
//! A bag with a `message_definitions` table (rosbag2 on Iron and later)
//! carries the concatenated `ros2msg` text of each type; older bags (Humble)
//! do not, and their channels have no schema.

use std::sync::Arc;

use crate::decode::{DecodeError, MessageDecoder};
use crate::model::Channel;

/// The decoder of `channel`: CDR with the bag's own definition. A channel whose
/// serialization format the bag's `metadata.yaml` contradicts is refused.
pub fn decoder(channel: &Channel) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    if let Some(f) = channel.metadata.get("metadata_serialization_format") {
        return Err(DecodeError::new(format!(
            "topic {}: metadata.yaml gives serialization format {f:?}, the database {:?}: not decoded",
            channel.topic, channel.message_encoding
        )));
    }
    if channel.message_encoding != "cdr" {
        return Err(DecodeError::new(format!(
            "topic {}: serialization format {:?} is not CDR",
            channel.topic, channel.message_encoding
        )));
    }
    crate::decode::decoder_for(channel)
}
