//! The one error type of logsql-media.

/// What went wrong turning bytes into pixels or points.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// The bytes do not hold what their message says they hold (a corrupt
    /// JPEG, a raw image shorter than `step * height`, a point field past
    /// `point_step`, ...).
    #[error("{0}")]
    Invalid(String),
    /// An encoding, pixel format or field type this crate does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A decoding limit was reached (pixels per image, points per cloud).
    #[error("limit reached: {0}")]
    Limit(String),
    /// Writing a media file failed (an I/O error, or the file writer refused
    /// the data).
    #[error("{0}")]
    Write(String),
}

/// The result type of logsql-media.
pub type Result<T> = std::result::Result<T, MediaError>;
