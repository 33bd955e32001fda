//! Why a lookup has no answer.

use thiserror::Error;

/// Why [`TransformBuffer::lookup`](crate::TransformBuffer::lookup) found no
/// pose. Times are nanoseconds since the Unix epoch (the stamps the
/// transforms carry).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LookupError {
    /// A frame no transform names.
    #[error("frame \"{frame}\" does not appear in any transform")]
    UnknownFrame {
        /// The frame as asked.
        frame: String,
    },
    /// The two frames are in trees that do not meet.
    #[error(
        "frames \"{target}\" and \"{source_frame}\" are not connected at {time} ns: \"{source_frame}\" ends at root \"{source_root}\", \"{target}\" at root \"{target_root}\""
    )]
    NotConnected {
        /// The frame the pose was asked in.
        target: String,
        /// The frame whose pose was asked.
        source_frame: String,
        /// The top of the source frame's chain.
        source_root: String,
        /// The top of the target frame's chain.
        target_root: String,
        /// The time asked.
        time: i64,
    },
    /// A dynamic link has no data at the time asked.
    #[error(
        "the link \"{parent}\" -> \"{child}\" has transforms from {first} ns to {last} ns; {time} ns is outside them"
    )]
    OutsideData {
        /// The link's parent frame.
        parent: String,
        /// The link's child frame.
        child: String,
        /// The time asked.
        time: i64,
        /// The link's first stamp.
        first: i64,
        /// The link's last stamp.
        last: i64,
    },
    /// Following parents came back to a frame already seen.
    #[error("the transforms of frame \"{frame}\" form a loop at {time} ns")]
    Loop {
        /// A frame on the loop.
        frame: String,
        /// The time asked.
        time: i64,
    },
}
