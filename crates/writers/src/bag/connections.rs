//! Which bag connection a channel becomes: [`connection_of`] maps a source
//! file's channel to the connection header a ROS1 bag records for it, and
//! [`check_channels`] checks a whole input before anything is written.

use logsql_readers::model::Channel;

use super::file::{BagConnection, md5sum_of};

/// The connection of `channel`: `Ok(None)` for a `ros1` channel without a
/// message type or an `md5sum` (stated, or computed from its definition: a
/// bag connection whose record was lost, its messages cannot be written), an
/// error, with the reason, for a channel of another encoding.
pub fn connection_of(channel: &Channel) -> Result<Option<BagConnection>, String> {
    if channel.message_encoding == "ros1" {
        // The md5sum computed once, here (a definition is parsed for it).
        return Ok(match (channel.message_type.clone(), md5sum_of(channel)) {
            (Some(ty), Some(md5sum)) => Some(BagConnection::with_header(channel, ty, md5sum)),
            _ => None,
        });
    }
    BagConnection::from_channel(channel)
        .map(Some)
        .map_err(|e| format!("{e} (connection headers are ROS1's)"))
}

/// Fails, with the reason, when a channel of `channels` cannot be a bag
/// connection ([`connection_of`]).
pub fn check_channels<'a>(channels: impl IntoIterator<Item = &'a Channel>) -> Result<(), String> {
    for c in channels {
        connection_of(c)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros1_channels_are_connections_and_others_are_refused() {
        let mut c = Channel {
            id: 0,
            topic: "/a".into(),
            message_type: Some("std_msgs/String".into()),
            message_encoding: "ros1".into(),
            schema_encoding: None,
            schema: None,
            metadata: Default::default(),
        };
        assert_eq!(connection_of(&c), Ok(None), "no md5sum: left out");
        // A definition gives the md5sum ROS computes.
        c.schema = Some(std::sync::Arc::from(&b"string data\n"[..]));
        let conn = connection_of(&c).unwrap().unwrap();
        assert_eq!(conn.md5sum, "992ce8a1687cec8c8bd883ec73ca41d1");
        assert_eq!(conn.message_definition, b"string data\n");
        c.metadata.insert("md5sum".into(), "abc".into());
        let conn = connection_of(&c).unwrap().unwrap();
        assert_eq!((conn.topic.as_str(), conn.md5sum.as_str()), ("/a", "abc"));
        c.message_encoding = "cdr".into();
        let e = check_channels([&c]).unwrap_err();
        assert!(e.contains("a ROS1 bag stores only ros1 messages"), "{e}");
        assert!(e.ends_with("(connection headers are ROS1's)"), "{e}");
    }
}
