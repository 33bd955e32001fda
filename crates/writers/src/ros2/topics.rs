//! Which ROS 2 bag topic a channel becomes: [`topic_of`] maps a source
//! file's channel to a `topics` row (type, QoS profiles, type hash,
//! definition), and [`check_channels`] checks a whole input before anything
//! is written.

use logsql_readers::model::Channel;

use super::db3::Db3Topic;

/// The topic of `channel`: `Ok(None)` for a channel without a message type
/// (its messages cannot be written), an error, with the reason, for a
/// channel of another encoding than `cdr`.
pub fn topic_of(channel: &Channel) -> Result<Option<Db3Topic>, String> {
    if channel.message_encoding != "cdr" {
        return Err(format!(
            "topic {:?} holds {:?} messages: a ROS 2 bag holds cdr messages",
            channel.topic, channel.message_encoding
        ));
    }
    Ok(channel
        .message_type
        .is_some()
        .then(|| Db3Topic::from_channel(channel)))
}

/// Fails, with the reason, when a channel of `channels` cannot be a ROS 2
/// bag topic ([`topic_of`]).
pub fn check_channels<'a>(channels: impl IntoIterator<Item = &'a Channel>) -> Result<(), String> {
    for c in channels {
        topic_of(c)?;
    }
    Ok(())
}
